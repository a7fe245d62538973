package app

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/servicekeys"
)

func cmdKeysCreate(fs *flag.FlagSet) command {
	var name string
	fs.StringVar(&name, "name", "", "what the key is for, e.g. billing-backend (required)")
	return command{
		required: []string{"name"},
		help:     "Makes a service key for a trusted backend and prints it. It is shown this once: only its\nSHA-256 is stored. Send it as Authorization: Bearer tgk_… to /api/v1/users/{user_id}/….",
		run: func(ctx context.Context, e env) error {
			return withKeys(ctx, e, func(keys *servicekeys.Keys, d *db.DB) error {
				key, err := keys.Create(ctx, name)
				recordByHand(ctx, e, d, "keys create", name, "", outcome(err, "created"))
				if err == nil {
					// The key alone on stdout, for scripts; the warning beside it for people.
					fmt.Fprintln(e.stdout, key)
					fmt.Fprintf(e.stderr, "service key %q: shown this once, only its SHA-256 is kept; store it now (lost: revoke it and make another)\n", name)
				}
				return err
			})
		},
	}
}

func cmdKeysList(*flag.FlagSet) command {
	return command{
		help: "Lists the service keys: name, the key's first characters, when made and last used.",
		run: func(ctx context.Context, e env) error {
			return withKeys(ctx, e, func(keys *servicekeys.Keys, _ *db.DB) error {
				list, err := keys.List(ctx)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "%-24s %-12s %-20s %s\n", "NAME", "PREFIX", "CREATED", "LAST USED")
				for _, k := range list {
					used := "never"
					if k.LastUsedAt != nil {
						used = k.LastUsedAt.Format(time.RFC3339)
					}
					fmt.Fprintf(e.stdout, "%-24s %-12s %-20s %s\n", k.Name, k.Prefix+"…", k.CreatedAt.Format(time.RFC3339), used)
				}
				return nil
			})
		},
	}
}

func cmdKeysRevoke(*flag.FlagSet) command {
	return command{
		args: "NAME",
		help: "Revokes the service key NAME: it is refused (401) from the next request on.",
		run: func(ctx context.Context, e env) error {
			return withKeys(ctx, e, func(keys *servicekeys.Keys, d *db.DB) error {
				err := keys.Revoke(ctx, e.args[0])
				recordByHand(ctx, e, d, "keys revoke", e.args[0], "", outcome(err, "revoked"))
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "revoked %s\n", e.args[0])
				return nil
			})
		},
	}
}

// withKeys runs fn over the service keys of DATABASE_URL (and the database, for the audit
// log) (migrated already: see openDB).
func withKeys(ctx context.Context, e env, fn func(keys *servicekeys.Keys, d *db.DB) error) error {
	d, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer d.Close()
	return fn(servicekeys.New(d), d)
}
