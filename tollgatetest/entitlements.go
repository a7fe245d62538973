package tollgatetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate/tollgate/entitlementtoken"
)

// EntitlementIssuer stands in for tollgate's entitlement tokens in a backend's tests: it
// signs tokens as tollgate does (ES256, kid, typ JWT; iss, sub, aud, iat, exp, jti,
// billing) with a key of its own, and serves that key at JWKSURL as tollgate serves its
// key set. Close it when done.
type EntitlementIssuer struct {
	// Issuer is the iss of its tokens (a PUBLIC_URL); Audience their aud.
	Issuer, Audience string
	// JWKSURL serves its key set.
	JWKSURL string
	key     *ecdsa.PrivateKey
	kid     string
	server  *httptest.Server
}

// NewEntitlementIssuer starts an issuer on a loopback port.
func NewEntitlementIssuer() (*EntitlementIssuer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	i := &EntitlementIssuer{key: key, kid: "tollgatetest-1", Issuer: "https://tollgate.test", Audience: entitlementtoken.DefaultAudience}
	point, err := key.PublicKey.Bytes()
	if err != nil {
		return nil, err
	}
	set, err := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "EC", "crv": "P-256", "kid": i.kid, "use": "sig", "alg": entitlementtoken.Algorithm,
		"x": base64.RawURLEncoding.EncodeToString(point[1:33]), "y": base64.RawURLEncoding.EncodeToString(point[33:]),
	}}})
	if err != nil {
		return nil, err
	}
	i.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.Write(set)
	}))
	i.JWKSURL = i.server.URL + "/.well-known/jwks.json"
	return i, nil
}

// Options are the verifier options that accept its tokens.
func (i *EntitlementIssuer) Options() entitlementtoken.Options {
	return entitlementtoken.Options{JWKSURL: i.JWKSURL, Issuer: i.Issuer, Audience: i.Audience}
}

// Mint signs a token saying billing for userID, valid for ttl from now.
func (i *EntitlementIssuer) Mint(userID string, billing entitlementtoken.Billing, ttl time.Duration) (string, error) {
	now := time.Now()
	var jti [16]byte
	rand.Read(jti[:])
	return i.Sign(map[string]any{
		"iss": i.Issuer, "sub": userID, "aud": i.Audience, "iat": now.Unix(), "exp": now.Add(ttl).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(jti[:]), "billing": billing,
	}, nil)
}

// Sign signs any claims with its key, its header's kid and typ set unless header sets
// them (and any other header fields header has): for tests of the tokens a backend must
// refuse.
func (i *EntitlementIssuer) Sign(claims map[string]any, header map[string]any) (string, error) {
	token := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims(claims))
	token.Header["kid"] = i.kid
	for name, value := range header {
		token.Header[name] = value
	}
	return token.SignedString(i.key)
}

// Close stops its key set's server.
func (i *EntitlementIssuer) Close() { i.server.Close() }
