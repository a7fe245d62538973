package signingkeys

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbq"
)

// List is every key made, oldest first, with its state now.
func (k *Keys) List(ctx context.Context) ([]Key, error) {
	k.forget() // a listing is read from the database, never from memory
	s, err := k.read(ctx)
	if err != nil {
		return nil, err
	}
	now := k.now()
	keys := make([]Key, 0, len(s))
	for i := range s {
		keys = append(keys, s.listed(&s[i], now))
	}
	return keys, nil
}

// listed is k as List shows it at now.
func (s set) listed(k *key, now time.Time) Key {
	state, until := s.state(k, now)
	listed := Key{KID: k.kid, Created: k.created, SignsFrom: k.signsFrom, State: state, Public: k.public}
	if until != never {
		listed.PublishedUntil = &until
	}
	return listed
}

// Rotate adds a key, published at once. It signs after MaxAge — when every verifier that
// cached the key set before it was added has read it again — or at once when now is set
// (a verifier then meets its kid before its cached set expires, and must read the set
// again to know it), as it does when no key signs yet. The key it supersedes stays published until the last exp it signed.
func (k *Keys) Rotate(ctx context.Context, now bool) (Key, error) {
	for try := 0; ; try++ {
		k.forget()
		s, err := k.read(ctx)
		if err != nil {
			return Key{}, err
		}
		signsFrom := k.now().Add(MaxAge)
		if now || s.signer(k.now()) == nil { // nothing signs yet: no verifier waits for it
			signsFrom, now = k.now(), true
		}
		added, err := k.add(ctx, s.lastSeq()+1, signsFrom)
		if errors.Is(err, errRaced) && try < 3 {
			continue
		}
		if err != nil {
			return Key{}, err
		}
		added.State = StateNext
		if now {
			added.State = StateSigning
		}
		k.forget()
		return added, nil
	}
}

// Retire withdraws the key kid from the key set at once: a key thought compromised. The
// tokens it signed stop verifying wherever the set is read again; if it was signing, the
// next token is signed by a new key made then.
func (k *Keys) Retire(ctx context.Context, kid string) (Key, error) {
	var retired int64
	err := k.db.Request(ctx, func(ctx context.Context) error {
		var err error
		retired, err = dbq.New(k.db).RetireSigningKey(ctx, dbq.RetireSigningKeyParams{Kid: kid, Now: nullTime(k.now())})
		return err
	}, nil)
	k.forget()
	if err != nil {
		return Key{}, err
	}
	if retired == 0 {
		return Key{}, fmt.Errorf("%w: %q (signing-keys list shows the keys)", ErrUnknown, kid)
	}
	keys, err := k.List(ctx)
	for _, key := range keys {
		if key.KID == kid {
			return key, err
		}
	}
	return Key{KID: kid, State: StateRetired}, err
}

func nullTime(t time.Time) sql.NullTime { return sql.NullTime{Time: t, Valid: true} }
