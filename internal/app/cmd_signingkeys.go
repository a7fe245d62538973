package app

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/signingkeys"
)

// signingKeysNote tells tollgate's signing keys from the service keys: two different
// things with "keys" in their names.
const signingKeysNote = "tollgate's own signing keys sign the entitlement tokens apps verify with the key set at\n" +
	"/.well-known/jwks.json. They are not service keys (tgk_…, for trusted backends calling the\n" +
	"service API): see \"tollgate help keys\"."

func cmdSigningKeysList(*flag.FlagSet) command {
	return command{
		help: "Lists tollgate's signing keys, oldest first: kid, when made, state (next: published, signing\n" +
			"from the time shown; signing; retired), until when a retired key stays published for the\n" +
			"tokens it signed, and the public key (JWK). Private keys are never shown.\n\n" + signingKeysNote,
		run: func(ctx context.Context, e env) error {
			return withSigningKeys(ctx, e, func(keys *signingkeys.Keys, _ *db.DB) error {
				list, err := keys.List(ctx)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "%-43s  %-20s  %-40s  %-20s  %s\n", "KID", "CREATED", "STATE", "PUBLISHED UNTIL", "PUBLIC KEY")
				for _, k := range list {
					public, err := json.Marshal(k.Public)
					if err != nil {
						return err
					}
					fmt.Fprintf(e.stdout, "%-43s  %-20s  %-40s  %-20s  %s\n", k.KID, stamp(k.Created), stateOf(k), publishedUntil(k), public)
				}
				return nil
			})
		},
	}
}

// stateOf is a key's state, with when a next key starts signing.
func stateOf(k signingkeys.Key) string {
	if k.State == signingkeys.StateNext {
		return "next (signs from " + stamp(k.SignsFrom) + ")"
	}
	return k.State
}

func publishedUntil(k signingkeys.Key) string {
	switch {
	case k.PublishedUntil == nil:
		return "while in use"
	case k.PublishedUntil.IsZero():
		return "no longer"
	}
	return stamp(*k.PublishedUntil)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func cmdSigningKeysRotate(fs *flag.FlagSet) command {
	var now bool
	fs.BoolVar(&now, "now", false, "sign with the new key at once (verifiers holding the cached key set read it again on its unknown kid)")
	return command{
		help: fmt.Sprintf("Adds a signing key. It is published in the key set at once and signs only after the key\n"+
			"set's max-age (%s) has passed, so that no verifier holding a cached set meets an unknown\n"+
			"kid; --now signs with it at once. The key it replaces stays published until the last\n"+
			"token it signed expires. Recorded in the audit log.\n\n%s", signingkeys.MaxAge, signingKeysNote),
		run: func(ctx context.Context, e env) error {
			return withSigningKeys(ctx, e, func(keys *signingkeys.Keys, d *db.DB) error {
				k, err := keys.Rotate(ctx, now)
				recordByHand(ctx, e, d, "signing-keys rotate", k.KID, "", outcome(err, "added, signing from "+stamp(k.SignsFrom)))
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "added %s: published now, signing from %s\n", k.KID, stamp(k.SignsFrom))
				return nil
			})
		},
	}
}

func cmdSigningKeysRetire(*flag.FlagSet) command {
	return command{
		args: "KID",
		help: "Withdraws the signing key KID from the key set at once — a key thought compromised: the\n" +
			"tokens it signed stop verifying as soon as a verifier reads the set again (at most the\n" +
			"set's max-age later; at once for one meeting an unknown kid). If it was signing, the next\n" +
			"token is signed by a new key. Recorded in the audit log.\n\n" + signingKeysNote,
		run: func(ctx context.Context, e env) error {
			return withSigningKeys(ctx, e, func(keys *signingkeys.Keys, d *db.DB) error {
				_, err := keys.Retire(ctx, e.args[0])
				recordByHand(ctx, e, d, "signing-keys retire", e.args[0], "", outcome(err, "retired"))
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "retired %s: withdrawn from the key set\n", e.args[0])
				return nil
			})
		},
	}
}

// withSigningKeys runs fn over the signing keys of DATABASE_URL (and the database, for
// the audit log) (migrated already: see openDB).
func withSigningKeys(ctx context.Context, e env, fn func(keys *signingkeys.Keys, d *db.DB) error) error {
	d, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer d.Close()
	return fn(signingkeys.New(d, nil), d)
}
