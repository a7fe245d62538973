package devidentity

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Audiences keep the service's own tokens apart: a refresh token, an e-mailed link or a
// PKCE code is never an access token, nor one another.
const (
	audAccess  = "authenticated" // what tollgate's API verifies (AUTH_JWT_AUDIENCE)
	audRefresh = "tollgate-dev-refresh"
	audLink    = "tollgate-dev-link"
	audCode    = "tollgate-dev-pkce-code"
)

// accessToken is a Supabase-shaped access token for u.
func (s *Service) accessToken(u user) (string, time.Time) {
	now := s.now()
	exp := now.Add(accessTTL)
	return s.sign(jwt.MapClaims{
		"iss": s.base, "sub": u.ID, "aud": audAccess, "exp": exp.Unix(), "iat": now.Unix(),
		"email": u.Email, "phone": "", "role": "authenticated", "aal": "aal1",
		"amr": []map[string]any{{"method": "password", "timestamp": now.Unix()}}, "session_id": newUUID(), "is_anonymous": false,
		"app_metadata":  map[string]any{"provider": "email", "providers": []string{"email"}},
		"user_metadata": map[string]any{},
	}), exp
}

// signed is a token of one audience for subject, valid for ttl, with extra claims.
func (s *Service) signed(aud, subject string, ttl time.Duration, extra jwt.MapClaims) string {
	now := s.now()
	claims := jwt.MapClaims{"iss": s.base, "sub": subject, "aud": aud, "exp": now.Add(ttl).Unix(), "iat": now.Unix()}
	for k, v := range extra {
		claims[k] = v
	}
	return s.sign(claims)
}

func (s *Service) sign(claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	tok.Header["kid"] = s.kid
	signed, err := tok.SignedString(s.key)
	if err != nil {
		panic("devidentity: signing with a P-256 key failed: " + err.Error()) // cannot happen with a valid key
	}
	return signed
}

var errExpired = errors.New("token expired")

// parse checks a token of audience aud and returns its claims; errExpired when only its
// time is up.
func (s *Service) parse(raw, aud string) (jwt.MapClaims, error) {
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return &s.key.PublicKey, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer(s.base), jwt.WithAudience(aud), jwt.WithTimeFunc(s.now))
	if errors.Is(err, jwt.ErrTokenExpired) {
		return nil, errExpired
	}
	if err != nil {
		return nil, err
	}
	return claims, nil
}

func claim(c jwt.MapClaims, name string) string { v, _ := c[name].(string); return v }

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
