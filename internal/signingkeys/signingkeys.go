// Package signingkeys keeps tollgate's own signing keys: ES256 (P-256) keys made on first
// need and kept in the database, so that every instance signs with the same set, and
// published as a JSON Web Key Set for whoever verifies what tollgate signs (the
// entitlement tokens). One key signs at a time; a rotated key is published at once and
// signs only after MaxAge, so that no verifier holding a cached set meets an unknown kid.
// Private keys never leave this package but as signatures.
package signingkeys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// MaxAge is how long a verifier may keep the key set (its Cache-Control max-age), and so
// how long a rotated key waits before it signs.
const MaxAge = 5 * time.Minute

// headroom is how far past the exp it signs a key's signed_until is written, so that a busy
// key writes it once in a while rather than at every token.
const headroom = 5 * time.Minute

// ErrUnknown is a kid no key in use has (never made, or already retired).
var ErrUnknown = errors.New("no signing key in use has that kid")

// Key is a key as listed: its public part only.
type Key struct {
	KID       string
	Created   time.Time
	SignsFrom time.Time
	State     string
	// PublishedUntil is when it leaves the key set: zero when it is not published, the
	// last exp it signed for a key that signs no more, nil while it signs or is next.
	PublishedUntil *time.Time
	Public         JWK
}

// Keys works on the signing_keys table.
type Keys struct {
	db  *db.DB
	now func() time.Time

	mu         sync.Mutex
	listening  bool
	generation uint64 // counts forgetting: a set read while it moved is not kept
	kept       set    // while listening: the set as last read (nil: read it)
	extended   map[string]time.Time
}

// New returns Keys over d; clock is their now (nil: the system's).
func New(d *db.DB, clock func() time.Time) *Keys {
	if clock == nil {
		clock = time.Now
	}
	return &Keys{db: d, now: func() time.Time { return clock().UTC() }, extended: map[string]time.Time{}}
}

// Sign signs payload (a JWT's claims, whose exp is exp) with the key that signs now,
// making one at first need, and answers the compact JWS and the key's kid. The key is
// kept published at least until exp.
func (k *Keys) Sign(ctx context.Context, payload []byte, exp time.Time) (token, kid string, err error) {
	signer, err := k.signer(ctx)
	if err != nil {
		return "", "", err
	}
	if err := k.extend(ctx, signer, exp); err != nil {
		return "", "", err
	}
	token, err = sign(signer.private, signer.kid, payload)
	return token, signer.kid, err
}

// SigningKID is the kid of the key that signs now, making one at first need.
func (k *Keys) SigningKID(ctx context.Context) (string, error) {
	signer, err := k.signer(ctx)
	if err != nil {
		return "", err
	}
	return signer.kid, nil
}

// JWKS is the key set as served: the public keys that verify tokens still in use. Asking
// for it is a need: a first key is made when there is none.
func (k *Keys) JWKS(ctx context.Context) ([]byte, error) {
	if _, err := k.signer(ctx); err != nil {
		return nil, err
	}
	s, err := k.read(ctx)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Keys []JWK `json:"keys"`
	}{s.published(k.now())})
}

// signer is the key that signs now; with none (no key yet, or the signing one retired), it
// makes one that signs at once. Processes racing to make it agree on one (the step's
// unique seq), and each signs with the one stored.
func (k *Keys) signer(ctx context.Context) (*key, error) {
	for try := 0; ; try++ {
		s, err := k.read(ctx)
		if err != nil {
			return nil, err
		}
		now := k.now()
		if found := s.signer(now); found != nil {
			return found, nil
		}
		if try == 3 {
			return nil, errors.New("no signing key could be made: other processes kept adding keys")
		}
		// A step taken meanwhile (the set held was old) is no error: read it and look again.
		if _, err := k.add(ctx, s.lastSeq()+1, now); err != nil && !errors.Is(err, errRaced) {
			return nil, err
		}
		k.forget()
	}
}

// extend writes that signer may have signed until exp (and headroom more), unless this
// process knows it already has.
func (k *Keys) extend(ctx context.Context, signer *key, exp time.Time) error {
	k.mu.Lock()
	known := k.extended[signer.kid]
	k.mu.Unlock()
	if !exp.After(signer.signedUntil) || !exp.After(known) {
		return nil
	}
	until := exp.Add(headroom).UTC()
	err := k.db.Request(ctx, func(ctx context.Context) error {
		return dbq.New(k.db).ExtendSigningKey(ctx, dbq.ExtendSigningKeyParams{Kid: signer.kid, SignedUntil: nullTime(until)})
	}, nil)
	if err != nil {
		return err
	}
	k.mu.Lock()
	if until.After(k.extended[signer.kid]) {
		k.extended[signer.kid] = until
	}
	k.mu.Unlock()
	return nil
}

// add stores a new key at step seq, signing from signsFrom; false when another process
// made that step's key first.
func (k *Keys) add(ctx context.Context, seq int64, signsFrom time.Time) (Key, error) {
	kid, private, public, err := newKey()
	if err != nil {
		return Key{}, err
	}
	jwk, err := json.Marshal(public)
	if err != nil {
		return Key{}, err
	}
	now := k.now()
	var added int64
	err = k.db.Request(ctx, func(ctx context.Context) error {
		added, err = dbq.New(k.db).AddSigningKey(ctx, dbq.AddSigningKeyParams{Kid: kid, Seq: seq, PrivateKey: private,
			PublicJwk: string(jwk), Now: now, SignsFrom: signsFrom.UTC()})
		return err
	}, nil)
	if err == nil && added == 0 {
		err = errRaced
	}
	return Key{KID: kid, Created: now, SignsFrom: signsFrom.UTC(), Public: public}, err
}

// errRaced is a step another process made a key for first.
var errRaced = errors.New("another process added a signing key at the same moment")

// read is the stored set: the one kept while listening, else read now.
func (k *Keys) read(ctx context.Context) (set, error) {
	k.mu.Lock()
	kept, generation, listening := k.kept, k.generation, k.listening
	k.mu.Unlock()
	if kept != nil {
		return kept, nil
	}
	var rows []dbq.SigningKey
	err := k.db.Request(ctx, func(ctx context.Context) error {
		var err error
		rows, err = dbq.New(k.db).ListSigningKeys(ctx)
		return err
	}, nil)
	if err != nil {
		return nil, err
	}
	s, err := readSet(rows)
	if err != nil {
		return nil, fmt.Errorf("reading the signing keys: %w", err)
	}
	k.mu.Lock()
	if listening && k.listening && k.generation == generation {
		k.kept = s
	}
	k.mu.Unlock()
	return s, nil
}

// forget drops the kept set: the next use reads it.
func (k *Keys) forget() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.generation++
	k.kept = nil
}

// ListenForChanges lets the keys be kept in memory, read again whenever any process makes,
// extends, retires or removes a key (on Postgres when it commits; on SQLite within
// db.PollInterval), until ctx ends. Without it every use reads the database. Run it beside
// the server.
func (k *Keys) ListenForChanges(ctx context.Context, log *slog.Logger) {
	defer k.listen(false)
	// The listener calls with "" once it listens, and again after each reconnection, when
	// what was notified meanwhile is lost: either way, read afresh.
	k.db.Listen(ctx, "tollgate_signing_keys", log, func(string) { k.listen(true) })
}

func (k *Keys) listen(listening bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.generation++
	k.listening = listening
	k.kept = nil
}
