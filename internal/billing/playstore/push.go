package playstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
)

// Refusals of a push, for the log: the answer to any of them is 401, and Pub/Sub retries.
var (
	errNoBearer   = errors.New("no bearer token")
	errPushClaims = errors.New("the push token is not Google's for this push subscription")
)

// pushKeys are Google's keys for the OIDC tokens of Pub/Sub pushes, fetched when first
// needed and again when a token names a key not held (Google rotates them). A fetch is
// attempted at most once every refetchAfter, whether it succeeded or not, so tokens that
// name keys nobody holds (forgeries) cannot make tollgate fetch for each of them. The
// fetch runs outside the lock: a token whose key is held verifies at once, whatever a
// fetch in flight is doing; one whose key is not waits for that fetch.
type pushKeys struct {
	url    string
	client *http.Client

	mu        sync.Mutex
	keys      keyfunc.Keyfunc // the last set fetched; nil before the first
	attempted time.Time       // when the last fetch started, whatever became of it
	inFlight  chan struct{}   // closed when the fetch in flight ends; nil when none
	failed    error           // the last fetch's failure, until one succeeds
}

const (
	refetchAfter = 30 * time.Second
	fetchTimeout = 10 * time.Second
)

// keyfunc is the key that verifies token, as of now.
func (k *pushKeys) keyfunc(token *jwt.Token, now time.Time) (any, error) {
	k.mu.Lock()
	keys := k.keys
	k.mu.Unlock()
	if keys != nil {
		key, err := keys.Keyfunc(token)
		if err == nil || !errors.Is(err, jwkset.ErrKeyNotFound) {
			return key, err
		}
	}
	keys, err := k.refresh(now)
	if err != nil {
		return nil, err
	}
	return keys.Keyfunc(token)
}

// refresh gives the keys after a fetch: the one in flight, else one started now when the
// last attempt is refetchAfter old, else the keys held (or the last failure).
func (k *pushKeys) refresh(now time.Time) (keyfunc.Keyfunc, error) {
	k.mu.Lock()
	wait := k.inFlight
	if wait == nil && (k.attempted.IsZero() || now.Sub(k.attempted) >= refetchAfter) {
		k.attempted, k.inFlight = now, make(chan struct{})
		wait = k.inFlight
		go k.fetch(wait)
	}
	k.mu.Unlock()
	if wait != nil {
		<-wait // the fetch ends within fetchTimeout
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keys == nil {
		return nil, cmp.Or(k.failed, errNoKeys)
	}
	return k.keys, nil
}

var errNoKeys = errors.New("push token keys: not fetched yet")

// fetch reads the key set and keeps it, or the failure; then it closes done.
func (k *pushKeys) fetch(done chan struct{}) {
	keys, err := k.get()
	k.mu.Lock()
	defer k.mu.Unlock()
	if err == nil {
		k.keys = keys
	}
	k.failed, k.inFlight = err, nil
	close(done)
}

func (k *pushKeys) get() (keyfunc.Keyfunc, error) {
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("push token keys: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("push token keys: status %d", resp.StatusCode)
	}
	keys, err := keyfunc.NewJWKSetJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("push token keys: %w", err)
	}
	return keys, nil
}

// pushClaims are the claims of a push's OIDC token.
type pushClaims struct {
	Email         string `json:"email"`
	EmailVerified bool   `json:"email_verified"`
	jwt.RegisteredClaims
}

// verifyPush checks the push's bearer token: signed by Google, issued by
// accounts.google.com to audience, for the service account email, not expired.
func (a *Adapter) verifyPush(h http.Header, now time.Time) error {
	header := h.Values("Authorization")
	if len(header) != 1 || !strings.HasPrefix(header[0], "Bearer ") {
		return errNoBearer
	}
	var claims pushClaims
	keyfunc := func(token *jwt.Token) (any, error) { return a.keys.keyfunc(token, now) }
	_, err := jwt.ParseWithClaims(strings.TrimPrefix(header[0], "Bearer "), &claims, keyfunc,
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithAudience(a.cfg.PushAudience), jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil {
		return fmt.Errorf("%w: %v", errPushClaims, err)
	}
	issuer := claims.Issuer
	if (issuer != "accounts.google.com" && issuer != "https://accounts.google.com") || claims.Email != a.cfg.PushServiceAccount || !claims.EmailVerified {
		return errPushClaims
	}
	return nil
}
