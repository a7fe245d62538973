// Package entitlementtoken verifies tollgate's entitlement tokens where they are used: a
// backend checks a user's plan from the token the app sends, with tollgate's public keys,
// without calling tollgate for each request and without a shared secret.
//
// A token is a compact JWS signed with ES256 by one of tollgate's keys, published at
// PUBLIC_URL/.well-known/jwks.json. Its claims are iss (tollgate's PUBLIC_URL), sub (the
// user id), aud (ENTITLEMENT_TOKEN_AUDIENCE, "tollgate" unless set), iat, exp, jti and
// billing — the billing object GET /api/v1/me answers, without usage. A token never claims
// more than tollgate knew when it signed it: its exp is at the latest the first moment the
// answer could change without any event (a period's, a trial's or a grant's end).
//
// The package needs the standard library and one JOSE library only; nothing else of
// tollgate.
package entitlementtoken

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Algorithm is the only algorithm a token may be signed with. Tokens naming another one
// (none, HS256, RS256 …) are refused, whatever key they name.
const Algorithm = "ES256"

// DefaultAudience is the aud tollgate signs tokens for unless ENTITLEMENT_TOKEN_AUDIENCE
// says otherwise.
const DefaultAudience = "tollgate"

// Leeway is the clock difference allowed on exp and nbf.
const Leeway = 30 * time.Second

// maxVerified bounds the tokens kept verified; when full, the expired ones go, and if that
// is not enough, all of them.
const maxVerified = 100_000

// Options says where tollgate's key set is and what a token must say.
type Options struct {
	// JWKSURL is tollgate's key set: PUBLIC_URL + "/.well-known/jwks.json". Required.
	JWKSURL string
	// Issuer is tollgate's PUBLIC_URL, which every token names as iss. Required.
	Issuer string
	// Audience is ENTITLEMENT_TOKEN_AUDIENCE; DefaultAudience when empty.
	Audience string
	// Client reads the key set; http.DefaultClient when nil.
	Client *http.Client
	// Now is the verifier's clock; time.Now when nil.
	Now func() time.Time
}

// Entitlement is what a verified token says.
type Entitlement struct {
	// UserID is the identity user's id (sub).
	UserID string
	// Billing is the user's billing answer when the token was signed. Its maps are shared
	// with the verifier's cache: read them, do not change them.
	Billing   Billing
	IssuedAt  time.Time
	ExpiresAt time.Time
	// ID is the token's jti.
	ID string
}

// Verifier verifies entitlement tokens. It is safe for concurrent use; make one and keep
// it, so that its key set and the tokens it has verified are kept too.
type Verifier struct {
	opts   Options
	parser *jwt.Parser
	keys   *keySet

	mu       sync.RWMutex
	verified map[string]Entitlement // tokens verified, until their exp
}

// NewVerifier returns a verifier for the tokens of the tollgate opts describes. It reads
// the key set on first need, not here.
func NewVerifier(opts Options) (*Verifier, error) {
	if opts.JWKSURL == "" || opts.Issuer == "" {
		return nil, errors.New("entitlementtoken: JWKSURL and Issuer are required")
	}
	if opts.Audience == "" {
		opts.Audience = DefaultAudience
	}
	if opts.Client == nil {
		opts.Client = http.DefaultClient
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	v := &Verifier{opts: opts, verified: map[string]Entitlement{}}
	v.parser = jwt.NewParser(jwt.WithValidMethods([]string{Algorithm}), jwt.WithIssuer(opts.Issuer),
		jwt.WithAudience(opts.Audience), jwt.WithLeeway(Leeway), jwt.WithExpirationRequired(), jwt.WithTimeFunc(opts.Now))
	v.keys = &keySet{url: opts.JWKSURL, client: opts.Client, now: opts.Now, changed: v.forget}
	return v, nil
}

// claims are a token's claims as read.
type claims struct {
	jwt.RegisteredClaims
	Billing *Billing `json:"billing"`
}

// Verify checks token — its signature by a key of tollgate's set (the kid in its header;
// never a key the token itself names or points at: jku, x5u, jwk and x5c are ignored),
// its algorithm (ES256 only), iss, aud, exp and nbf (with Leeway) — and answers what it
// says. Errors wrap ErrInvalid (the token is refused) or ErrKeySet (no key set could be
// read yet). A token verified once is kept verified until its exp: seen again, it costs
// a map lookup.
func (v *Verifier) Verify(ctx context.Context, token string) (Entitlement, error) {
	now := v.opts.Now()
	v.mu.RLock()
	e, ok := v.verified[token]
	v.mu.RUnlock()
	if ok {
		if now.Before(e.ExpiresAt.Add(Leeway)) {
			return e, nil
		}
		v.mu.Lock()
		delete(v.verified, token)
		v.mu.Unlock()
		return Entitlement{}, fmt.Errorf("%w: token has expired", ErrInvalid)
	}
	var c claims
	var keyErr error
	_, err := v.parser.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, errors.New("the token names no key (kid)")
		}
		key, err := v.keys.key(ctx, kid)
		keyErr = err
		return key, err
	})
	if errors.Is(keyErr, ErrKeySet) {
		return Entitlement{}, keyErr
	}
	if err != nil {
		return Entitlement{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if c.Subject == "" || c.Billing == nil {
		return Entitlement{}, fmt.Errorf("%w: not an entitlement token (no sub or billing)", ErrInvalid)
	}
	e = Entitlement{UserID: c.Subject, Billing: *c.Billing, ExpiresAt: c.ExpiresAt.Time, ID: c.ID}
	if c.IssuedAt != nil {
		e.IssuedAt = c.IssuedAt.Time
	}
	v.keep(token, e, now)
	return e, nil
}

// keep remembers a verified token until its exp.
func (v *Verifier) keep(token string, e Entitlement, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.verified) >= maxVerified {
		for t, kept := range v.verified {
			if !now.Before(kept.ExpiresAt.Add(Leeway)) {
				delete(v.verified, t)
			}
		}
		if len(v.verified) >= maxVerified {
			clear(v.verified)
		}
	}
	v.verified[token] = e
}

// forget drops the tokens kept verified: the key set changed, and a key withdrawn from it
// must stop its tokens verifying.
func (v *Verifier) forget() {
	v.mu.Lock()
	defer v.mu.Unlock()
	clear(v.verified)
}
