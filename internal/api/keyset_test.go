package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func waitUntil(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestKeyRotation(t *testing.T) {
	h := newHarness(t, harnessConfig{keySet: KeySetOptions{RefreshInterval: 100 * time.Millisecond, UnknownKIDInterval: time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.keys.Run(ctx)
	// Start from a loaded set: a first-use fetch would spend the refetch allowance that the
	// new kid below needs, which is the rate limit working, not rotation.
	waitUntil(t, 5*time.Second, h.keys.Loaded)

	oldKey, newKey := h.key, newECKey(t, "key-2")
	oldToken, newToken := oldKey.mint(t, validClaims()), newKey.mint(t, validClaims())
	mustStatus(t, h.me(bearer(oldToken)), http.StatusOK)

	// The identity service starts publishing the new key beside the old one; a token with
	// the new kid triggers a refetch and both are valid.
	h.jwks.setKeys(oldKey, newKey)
	mustStatus(t, h.me(bearer(newToken)), http.StatusOK)
	mustStatus(t, h.me(bearer(oldToken)), http.StatusOK)

	// The old key is withdrawn: after the next refresh its tokens are refused, even though
	// one was verified (and cached) a moment ago.
	h.jwks.setKeys(newKey)
	version := h.keys.Version()
	waitUntil(t, 5*time.Second, func() bool { return h.keys.Version() != version })
	mustStatus(t, h.me(bearer(oldToken)), http.StatusUnauthorized)
	mustStatus(t, h.me(bearer(newToken)), http.StatusOK)
}

func TestUnknownKIDsCauseAtMostOneFetch(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	mustStatus(t, h.me(bearer(h.key.mint(t, validClaims()))), http.StatusOK) // first load
	before := h.jwks.requests.Load()
	stranger := newECKey(t, "unknown-kid")
	var wg sync.WaitGroup
	start := time.Now()
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			claims := validClaims()
			claims["jti"] = fmt.Sprint(i) // a string, as RFC 7519 wants: a number fails parsing before the key lookup
			if rec := h.me(bearer(stranger.mint(t, claims))); rec.Code != http.StatusUnauthorized {
				t.Errorf("unknown kid answered %d", rec.Code)
			}
		}()
	}
	wg.Wait()
	// Exactly one: none would mean a rotated-in key is never picked up; more would let
	// forged kids hammer the identity service.
	if extra := h.jwks.requests.Load() - before; extra != 1 {
		t.Fatalf("20 unknown-kid requests caused %d key set fetches, want exactly 1", extra)
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Fatalf("requests were held for %v", waited)
	}
}

func TestKeySetDownAtStartThenRecovers(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.jwks.setDown(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.keys.Run(ctx)

	token := h.key.mint(t, validClaims())
	rec := h.me(bearer(token))
	mustStatus(t, rec, http.StatusServiceUnavailable)
	if rec.Header().Get("Retry-After") == "" || problemType(rec) != "unavailable" {
		t.Fatalf("503 without Retry-After or problem type: %v %s", rec.Header(), rec.Body)
	}

	waitUntil(t, 5*time.Second, func() bool { return strings.Contains(h.logs.String(), "cannot fetch the identity service's key set") })
	h.jwks.setDown(false)
	waitUntil(t, 10*time.Second, h.keys.Loaded)
	mustStatus(t, h.me(bearer(token)), http.StatusOK)
}
