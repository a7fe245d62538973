package entitlementtoken

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// refetchEvery bounds the reads of the key set a token with an unknown kid causes: a flood
// of forged kids costs one read per 30 s.
const refetchEvery = 30 * time.Second

// defaultMaxAge is how long a key set is fresh when its answer does not say.
const defaultMaxAge = 5 * time.Minute

// keySet is the verifier's copy of tollgate's JSON Web Key Set. It is read on first need,
// read again when a token names a kid it lacks (at most every refetchEvery) and, in the
// background, once it is older than its max-age. A read that fails keeps the set it had:
// tokens signed by keys it holds go on verifying through an outage of tollgate.
type keySet struct {
	url    string
	client *http.Client
	now    func() time.Time

	mu        sync.Mutex
	keys      map[string]*ecdsa.PublicKey
	fresh     time.Time // until when keys is fresh
	tried     time.Time // the last read, good or not
	reading   bool      // a background read is under way
	changed   func()    // called when a read changed the kids held
	lastError error
}

// key is the public key of kid.
func (s *keySet) key(ctx context.Context, kid string) (*ecdsa.PublicKey, error) {
	s.mu.Lock()
	key, held := s.keys[kid]
	now := s.now()
	stale := s.keys != nil && now.After(s.fresh) && !s.reading && now.Sub(s.tried) >= refetchEvery
	mayRead := s.keys == nil || now.Sub(s.tried) >= refetchEvery
	if stale {
		s.reading = true
	}
	s.mu.Unlock()
	if held {
		if stale {
			go func() { _ = s.read(context.WithoutCancel(ctx)) }()
		}
		return key, nil
	}
	if !mayRead {
		return nil, fmt.Errorf("%w: no key %q in the key set", ErrInvalid, kid)
	}
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	key, held = s.keys[kid]
	s.mu.Unlock()
	if !held {
		return nil, fmt.Errorf("%w: no key %q in the key set", ErrInvalid, kid)
	}
	return key, nil
}

// read reads the key set, keeping the one it had when that fails.
func (s *keySet) read(ctx context.Context) error {
	keys, maxAge, err := s.fetch(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reading = false
	s.tried = s.now()
	if err != nil {
		s.lastError = err
		if s.keys == nil {
			return fmt.Errorf("%w: %v", ErrKeySet, err)
		}
		return nil
	}
	if s.changed != nil && !sameKids(s.keys, keys) {
		s.changed()
	}
	s.keys, s.fresh, s.lastError = keys, s.tried.Add(maxAge), nil
	return nil
}

func sameKids(a, b map[string]*ecdsa.PublicKey) bool {
	if len(a) != len(b) {
		return false
	}
	for kid, key := range a {
		if other, ok := b[kid]; !ok || !other.Equal(key) {
			return false
		}
	}
	return true
}

// fetch reads the set at url: its ES256 keys by kid, and its max-age.
func (s *keySet) fetch(ctx context.Context) (map[string]*ecdsa.PublicKey, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("the key set answered %s", resp.Status)
	}
	var set struct {
		Keys []struct {
			Kty, Crv, X, Y, Kid, Use, Alg string
		} `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, 0, fmt.Errorf("the key set is not JSON: %v", err)
	}
	keys := map[string]*ecdsa.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "EC" || k.Crv != "P-256" || k.Kid == "" || (k.Alg != "" && k.Alg != Algorithm) || (k.Use != "" && k.Use != "sig") {
			continue // a key for something else: never used
		}
		x, errX := base64.RawURLEncoding.DecodeString(k.X)
		y, errY := base64.RawURLEncoding.DecodeString(k.Y)
		if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
			continue
		}
		key, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			continue // not a point of the curve
		}
		keys[k.Kid] = key
	}
	return keys, maxAge(resp.Header.Get("Cache-Control")), nil
}

// maxAge reads Cache-Control's max-age, defaultMaxAge without one.
func maxAge(cacheControl string) time.Duration {
	for _, directive := range strings.Split(cacheControl, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(directive), "=")
		if strings.EqualFold(name, "max-age") {
			if seconds, err := strconv.Atoi(value); err == nil && seconds >= 0 {
				return time.Duration(seconds) * time.Second
			}
		}
	}
	return defaultMaxAge
}

var (
	// ErrInvalid is a token that does not verify: malformed, signed by a key not in the
	// set, by another algorithm, for another issuer or audience, or expired.
	ErrInvalid = errors.New("entitlement token: invalid")
	// ErrKeySet is a key set that could not be read, when none was held before.
	ErrKeySet = errors.New("entitlement token: the key set cannot be read")
)
