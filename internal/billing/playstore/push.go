package playstore

import (
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
// needed and again when a token names a key not held (Google rotates them), at most once
// every refetchAfter.
type pushKeys struct {
	url     string
	client  *http.Client
	mu      sync.Mutex
	keys    keyfunc.Keyfunc
	fetched time.Time
}

const refetchAfter = 30 * time.Second

func (k *pushKeys) keyfunc(token *jwt.Token) (any, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keys != nil {
		key, err := k.keys.Keyfunc(token)
		if err == nil || !errors.Is(err, jwkset.ErrKeyNotFound) || time.Since(k.fetched) < refetchAfter {
			return key, err
		}
	}
	if err := k.fetch(); err != nil {
		return nil, err
	}
	return k.keys.Keyfunc(token)
}

func (k *pushKeys) fetch() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return fmt.Errorf("push token keys: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("push token keys: status %d", resp.StatusCode)
	}
	keys, err := keyfunc.NewJWKSetJSON(raw)
	if err != nil {
		return fmt.Errorf("push token keys: %w", err)
	}
	k.keys, k.fetched = keys, time.Now()
	return nil
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
	_, err := jwt.ParseWithClaims(strings.TrimPrefix(header[0], "Bearer "), &claims, a.keys.keyfunc,
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
