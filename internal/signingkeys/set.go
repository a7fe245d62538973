package signingkeys

import (
	"crypto/ecdsa"
	"encoding/json"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbq"
)

// States a key is listed in.
const (
	// StateNext is a key published and not signing yet: it signs from its SignsFrom.
	StateNext = "next"
	// StateSigning is the one key that signs now.
	StateSigning = "signing"
	// StateRetired is a key that signs no more: superseded by a later one (published until
	// the last exp it signed) or withdrawn by signing-keys retire (published no more).
	StateRetired = "retired"
)

// key is one stored key as a process holds it.
type key struct {
	kid         string
	seq         int64
	private     *ecdsa.PrivateKey
	public      JWK
	created     time.Time
	signsFrom   time.Time
	signedUntil time.Time // zero: it never signed
	retired     time.Time // zero: not withdrawn
}

// set is every stored key, oldest first, as read at one moment. Which key signs and which
// are published depend on the time they are asked at, not on when the set was read: a
// rotated key starts signing on time without a read.
type set []key

func readSet(rows []dbq.SigningKey) (set, error) {
	s := make(set, 0, len(rows))
	for _, r := range rows {
		private, err := parsePrivate(r.PrivateKey)
		if err != nil {
			return nil, err
		}
		var public JWK
		if err := json.Unmarshal([]byte(r.PublicJwk), &public); err != nil {
			return nil, err
		}
		s = append(s, key{kid: r.Kid, seq: r.Seq, private: private, public: public, created: r.CreatedAt.UTC(),
			signsFrom: r.SignsFrom.UTC(), signedUntil: r.SignedUntil.Time.UTC(), retired: r.RetiredAt.Time.UTC()})
	}
	return s, nil
}

// signer is the key that signs at now: of the keys not withdrawn whose time to sign has
// come, the latest (by step), or nil when there is none.
func (s set) signer(now time.Time) *key {
	var found *key
	for i := range s {
		k := &s[i]
		if k.retired.IsZero() && !k.signsFrom.After(now) {
			if found == nil || k.signsFrom.After(found.signsFrom) || (k.signsFrom.Equal(found.signsFrom) && k.seq > found.seq) {
				found = k
			}
		}
	}
	return found
}

// state is k's state at now, and until when it is published (zero: it is not).
func (s set) state(k *key, now time.Time) (string, time.Time) {
	signer := s.signer(now)
	switch {
	case !k.retired.IsZero():
		return StateRetired, time.Time{}
	case signer != nil && signer.kid == k.kid:
		return StateSigning, never
	case k.signsFrom.After(now):
		return StateNext, never
	case k.signedUntil.After(now):
		return StateRetired, k.signedUntil
	}
	return StateRetired, time.Time{}
}

// never stands for "as long as it is not withdrawn or superseded".
var never = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// published is the public keys that verify tokens still in use at now: the signing key,
// the next ones, and those that stopped signing until the last exp they signed.
func (s set) published(now time.Time) []JWK {
	keys := []JWK{}
	for i := range s {
		if _, until := s.state(&s[i], now); until.After(now) {
			keys = append(keys, s[i].public)
		}
	}
	return keys
}

// lastSeq is the latest step, 0 when there is no key.
func (s set) lastSeq() int64 {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1].seq
}
