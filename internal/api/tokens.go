package api

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate/tollgate/internal/jwks"
)

// User is the current user of an API request, built from the verified token's claims
// alone: no database record stands behind it.
type User struct {
	ID           string         `json:"id"`
	Email        string         `json:"email"`
	Phone        string         `json:"phone"`
	Role         string         `json:"role"`
	AAL          string         `json:"aal"`
	SessionID    string         `json:"session_id"`
	IsAnonymous  bool           `json:"is_anonymous"`
	AppMetadata  map[string]any `json:"app_metadata"`
	UserMetadata map[string]any `json:"user_metadata"`
}

// claims are the identity service's access token claims.
type claims struct {
	jwt.RegisteredClaims
	Email        string         `json:"email"`
	Phone        string         `json:"phone"`
	Role         string         `json:"role"`
	AAL          string         `json:"aal"`
	SessionID    string         `json:"session_id"`
	IsAnonymous  bool           `json:"is_anonymous"`
	AppMetadata  map[string]any `json:"app_metadata"`
	UserMetadata map[string]any `json:"user_metadata"`
}

// Leeway is the clock skew allowed on exp, nbf and iat.
const Leeway = 30 * time.Second

// MaxTokenBytes bounds what is parsed at all; identity-service tokens are about 1 KiB.
const MaxTokenBytes = 16 << 10

// asymmetricAlgs are the only algorithms accepted from the key set. HS256 joins them only
// with an explicitly configured secret.
var asymmetricAlgs = []string{"ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA"}

var errInvalidToken = errors.New("invalid token")

// VerifierOptions configures a Verifier.
type VerifierOptions struct {
	Issuer   string
	Audience string
	// HS256Secret, when set, also accepts legacy HS256 tokens signed with it.
	HS256Secret string
	Clock       func() time.Time
	// CacheSize bounds the verified-token cache; 0 means 10 000.
	CacheSize int
}

// Verifier checks identity-service access tokens.
type Verifier struct {
	keys   *KeySet
	secret []byte
	parser *jwt.Parser
	now    func() time.Time
	cache  tokenCache
}

// NewVerifier returns a verifier over keys.
func NewVerifier(keys *KeySet, opts VerifierOptions) *Verifier {
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	algs := asymmetricAlgs
	if opts.HS256Secret != "" {
		algs = append(append([]string{}, asymmetricAlgs...), "HS256")
	}
	size := opts.CacheSize
	if size <= 0 {
		size = 10_000
	}
	return &Verifier{
		keys: keys, secret: []byte(opts.HS256Secret), now: clock,
		parser: jwt.NewParser(
			jwt.WithValidMethods(algs),
			jwt.WithIssuer(opts.Issuer),
			jwt.WithAudience(opts.Audience),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(Leeway),
			jwt.WithTimeFunc(clock),
		),
		cache: tokenCache{max: size, entries: map[string]cachedToken{}},
	}
}

// verified is the user of a verified token, and that user encoded as /api/v1/me sends it:
// encoded once per token, not once per request.
type verified struct {
	user    User
	encoded []byte
}

// verify returns the user of a valid token, ErrNoKeySet when no key set was ever loaded,
// or errInvalidToken.
func (v *Verifier) verify(ctx context.Context, raw string) (verified, error) {
	version := v.keys.Version()
	if found, ok := v.cache.get(raw, version, v.now()); ok {
		return found, nil
	}
	user, expires, err := v.verifyUncached(ctx, raw)
	if err != nil {
		return verified{}, err
	}
	encoded, err := encodeJSON(user)
	if err != nil {
		return verified{}, err
	}
	found := verified{user: user, encoded: encoded}
	v.cache.put(raw, cachedToken{verified: found, expires: expires, version: version})
	return found, nil
}

// verifyUncached does the full check: signature against the key set, then the claims.
func (v *Verifier) verifyUncached(ctx context.Context, raw string) (User, time.Time, error) {
	var c claims
	_, err := v.parser.ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) {
		if t.Method.Alg() == "HS256" {
			return v.secret, nil // only reachable when a secret is configured
		}
		return v.keys.Key(ctx, t)
	})
	switch {
	case errors.Is(err, jwks.ErrNoURL):
		return User{}, time.Time{}, ErrNoIdentityService
	case errors.Is(err, ErrNoKeySet):
		return User{}, time.Time{}, ErrNoKeySet
	case err != nil, c.Subject == "":
		return User{}, time.Time{}, errInvalidToken
	}
	user := User{
		ID: c.Subject, Email: c.Email, Phone: c.Phone, Role: c.Role, AAL: c.AAL, SessionID: c.SessionID,
		IsAnonymous: c.IsAnonymous, AppMetadata: c.AppMetadata, UserMetadata: c.UserMetadata,
	}
	if user.AppMetadata == nil {
		user.AppMetadata = map[string]any{}
	}
	if user.UserMetadata == nil {
		user.UserMetadata = map[string]any{}
	}
	return user, c.ExpiresAt.Add(Leeway), nil
}

// tokenCache remembers verified tokens until they expire or the key set changes, so a
// client repeating its token pays for one signature check, not one per request. It is
// keyed by the token itself: only tokens that verified are kept, so only the identity
// service's own tokens take its room, and a lookup is the map's hash and one comparison
// rather than a SHA-256 of every request's token.
type tokenCache struct {
	mu      sync.RWMutex
	max     int
	entries map[string]cachedToken
}

type cachedToken struct {
	verified
	expires time.Time
	version uint64
}

func (c *tokenCache) get(token string, version uint64, now time.Time) (verified, bool) {
	c.mu.RLock()
	e, ok := c.entries[token]
	c.mu.RUnlock()
	if !ok || e.version != version || !now.Before(e.expires) {
		return verified{}, false
	}
	return e.verified, true
}

func (c *tokenCache) put(token string, e cachedToken) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		clear(c.entries) // crude, but bounded and rare: tokens live an hour
	}
	c.entries[token] = e
}
