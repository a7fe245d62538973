package signingkeys_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/signingkeys"
)

var start = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// clock is a test's now, moved by hand.
type clock struct{ at atomic.Int64 }

func newClock() *clock               { c := &clock{}; c.at.Store(start.UnixNano()); return c }
func (c *clock) now() time.Time      { return time.Unix(0, c.at.Load()).UTC() }
func (c *clock) add(d time.Duration) { c.at.Add(int64(d)) }

type keySet struct {
	Keys []signingkeys.JWK `json:"keys"`
}

func jwks(t *testing.T, k *signingkeys.Keys) keySet {
	t.Helper()
	body, err := k.JWKS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var s keySet
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func kids(s keySet) string {
	var k []string
	for _, key := range s.Keys {
		k = append(k, key.Kid)
	}
	return strings.Join(k, ",")
}

// verify checks token's ES256 signature with the key of its kid in s, as any verifier
// does; it answers the kid.
func verify(t *testing.T, s keySet, token string) (string, bool) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWS: %q", token)
	}
	h, _ := base64.RawURLEncoding.DecodeString(parts[0])
	var header struct{ Alg, Kid, Typ string }
	if err := json.Unmarshal(h, &header); err != nil || header.Alg != "ES256" || header.Typ != "JWT" {
		t.Fatalf("header %s: %v", h, err)
	}
	for _, key := range s.Keys {
		if key.Kid != header.Kid {
			continue
		}
		x, _ := base64.RawURLEncoding.DecodeString(key.X)
		y, _ := base64.RawURLEncoding.DecodeString(key.Y)
		pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
		return header.Kid, len(sig) == 64 && ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
	}
	return header.Kid, false
}

func signAt(t *testing.T, k *signingkeys.Keys, exp time.Time) (string, string) {
	t.Helper()
	token, kid, err := k.Sign(context.Background(), []byte(`{"sub":"u"}`), exp)
	if err != nil {
		t.Fatal(err)
	}
	return token, kid
}

// TestInstancesRacingAtFirstNeedAgreeOnOneKey: processes that sign at the same moment on an
// empty table make one key between them, sign with it, and serve one key set.
func TestInstancesRacingAtFirstNeedAgreeOnOneKey(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		c := newClock()
		const instances = 6
		got := make([]string, instances)
		var wg sync.WaitGroup
		for i := range instances {
			wg.Go(func() {
				_, kid, err := signingkeys.New(d, c.now).Sign(context.Background(), []byte(`{}`), c.now().Add(time.Minute))
				if err != nil {
					t.Error(err)
				}
				got[i] = kid
			})
		}
		wg.Wait()
		for _, kid := range got {
			if kid != got[0] {
				t.Fatalf("instances signed with different keys: %v", got)
			}
		}
		a, b := jwks(t, signingkeys.New(d, c.now)), jwks(t, signingkeys.New(d, c.now))
		if len(a.Keys) != 1 || kids(a) != got[0] || kids(b) != kids(a) {
			t.Fatalf("key sets %v and %v, want the one key %s", kids(a), kids(b), got[0])
		}
	})
}

// TestRotation: a rotated key is published at once and signs only after MaxAge; the key it
// supersedes stays published until the last exp it signed, then leaves; with now, the new
// key signs at once and tokens signed before still verify.
func TestRotation(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		c := newClock()
		k := signingkeys.New(d, c.now)
		old, first := signAt(t, k, c.now().Add(15*time.Minute))
		next, err := k.Rotate(ctx, false)
		if err != nil || next.State != signingkeys.StateNext || !next.SignsFrom.Equal(c.now().Add(signingkeys.MaxAge)) {
			t.Fatalf("rotate: %+v %v", next, err)
		}
		if set := jwks(t, k); kids(set) != first+","+next.KID {
			t.Fatalf("after rotate the set is %s, want both keys", kids(set))
		}
		if _, kid := signAt(t, k, c.now().Add(15*time.Minute)); kid != first {
			t.Fatalf("the rotated key signed before its time: %s", kid)
		}
		c.add(signingkeys.MaxAge)
		if _, kid := signAt(t, k, c.now().Add(15*time.Minute)); kid != next.KID {
			t.Fatalf("after MaxAge the old key still signs: %s", kid)
		}
		if kid, ok := verify(t, jwks(t, k), old); !ok || kid != first {
			t.Fatal("a token the old key signed does not verify while it is valid")
		}
		c.add(15*time.Minute + 5*time.Minute + time.Second) // past its last exp and the headroom
		if set := jwks(t, k); kids(set) != next.KID {
			t.Fatalf("the old key is still published past its last exp: %s", kids(set))
		}

		now, err := k.Rotate(ctx, true)
		if err != nil || now.State != signingkeys.StateSigning {
			t.Fatalf("rotate --now: %+v %v", now, err)
		}
		token, kid := signAt(t, k, c.now().Add(time.Minute))
		if kid != now.KID {
			t.Fatalf("rotate --now: signed by %s, want %s", kid, now.KID)
		}
		if _, ok := verify(t, jwks(t, k), token); !ok {
			t.Fatal("a token of the new key does not verify")
		}
		listed, err := k.List(ctx)
		if err != nil || len(listed) != 3 {
			t.Fatalf("list: %+v %v", listed, err)
		}
		states := []string{listed[0].State, listed[1].State, listed[2].State}
		if strings.Join(states, " ") != "retired retired signing" || listed[1].PublishedUntil == nil || listed[0].PublishedUntil == nil || !listed[0].PublishedUntil.IsZero() {
			t.Fatalf("states %v, published %v %v", states, listed[0].PublishedUntil, listed[1].PublishedUntil)
		}
	})
}

// TestRetire: a retired key leaves the set at once, its tokens stop verifying, and the
// next token is signed by a key made then; a kid that is not in use is refused.
func TestRetire(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		c := newClock()
		k := signingkeys.New(d, c.now)
		token, kid := signAt(t, k, c.now().Add(time.Hour))
		retired, err := k.Retire(ctx, kid)
		if err != nil || retired.State != signingkeys.StateRetired {
			t.Fatalf("retire: %+v %v", retired, err)
		}
		if _, ok := verify(t, jwks(t, k), token); ok {
			t.Fatal("a retired key's token still verifies against the set")
		}
		if _, again := signAt(t, k, c.now().Add(time.Hour)); again == kid {
			t.Fatal("a retired key signed")
		}
		if _, err := k.Retire(ctx, kid); !errors.Is(err, signingkeys.ErrUnknown) {
			t.Fatalf("retiring it twice: %v", err)
		}
		if _, err := k.Retire(ctx, "no-such-kid"); !errors.Is(err, signingkeys.ErrUnknown) {
			t.Fatalf("retiring an unknown kid: %v", err)
		}
	})
}

// TestAListeningServerSeesAnotherProcesssChange: a server keeping the keys in memory signs
// with a key another process rotated in with --now within a few seconds, and stops
// publishing one it retired.
func TestAListeningServerSeesAnotherProcesssChange(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		server := signingkeys.New(d, nil)
		go server.ListenForChanges(ctx, slog.New(slog.DiscardHandler))
		cli := signingkeys.New(d, nil)
		_, first := signAt(t, server, time.Now().Add(time.Minute))
		rotated, err := cli.Rotate(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { _, kid := signAt(t, server, time.Now().Add(time.Minute)); return kid == rotated.KID })
		if _, err := cli.Retire(ctx, first); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return !strings.Contains(kids(jwks(t, server)), first) })
	})
}

// waitFor polls cond for up to 5 s: what "within a few seconds" means here.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("not seen within 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
