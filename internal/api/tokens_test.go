package api

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// rawToken assembles a token from a header and claims with the given signature bytes.
func rawToken(t *testing.T, header map[string]any, claims jwt.MapClaims, signature string) string {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	return b64(h) + "." + b64(c) + "." + signature
}

func with(claims jwt.MapClaims, changes map[string]any) jwt.MapClaims {
	out := jwt.MapClaims{}
	for k, v := range claims {
		out[k] = v
	}
	for k, v := range changes {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// TestAttacksNeverReachAHandler: every forged, altered or out-of-policy token is refused
// with 401 by the middleware, and the handler behind it never runs.
func TestAttacksNeverReachAHandler(t *testing.T) {
	h := newHarness(t, harnessConfig{keySet: KeySetOptions{UnknownKIDInterval: time.Millisecond}})
	other := newECKey(t, "key-from-elsewhere")
	rsaKey := newRSAKey(t, "key-1") // same kid as the real EC key
	now := time.Now()
	good := h.key.mint(t, validClaims())
	parts := strings.Split(good, ".")
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sig[len(sig)-1] ^= 1
	flipped := parts[0] + "." + parts[1] + "." + b64(sig)

	pubDER, _ := x509.MarshalPKIXPublicKey(h.key.private.Public())
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	jwkJSON, _ := json.Marshal(h.key.jwk())
	hmacWith := func(secret []byte) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, validClaims())
		tok.Header["kid"] = h.key.kid
		s, err := tok.SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	attacker := newJWKSServer(t, other)
	jkuToken := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, validClaims())
		tok.Header["kid"], tok.Header["jku"], tok.Header["x5u"] = other.kid, attacker.URL, attacker.URL
		s, _ := tok.SignedString(other.private)
		return s
	}()
	embeddedJWK := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, validClaims())
		tok.Header["kid"], tok.Header["jwk"] = other.kid, other.jwk()
		s, _ := tok.SignedString(other.private)
		return s
	}()
	es384 := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodES384, validClaims())
		tok.Header["kid"] = h.key.kid
		s, _ := tok.SignedString(h.key.private) // a P-256 key cannot make a valid ES384 token
		return s
	}()

	attacks := []struct{ name, authorization string }{
		{"alg none", bearer(rawToken(t, map[string]any{"alg": "none", "typ": "JWT", "kid": h.key.kid}, validClaims(), ""))},
		{"alg None", bearer(rawToken(t, map[string]any{"alg": "None", "kid": h.key.kid}, validClaims(), ""))},
		{"alg NONE", bearer(rawToken(t, map[string]any{"alg": "NONE", "kid": h.key.kid}, validClaims(), ""))},
		{"alg nOnE with a signature", bearer(rawToken(t, map[string]any{"alg": "nOnE", "kid": h.key.kid}, validClaims(), parts[2]))},
		{"HS256 keyed with the public key PEM", bearer(hmacWith(pubPEM))},
		{"HS256 keyed with the public JWK", bearer(hmacWith(jwkJSON))},
		{"RS256 header on the EC key's kid", bearer(rsaKey.mint(t, validClaims()))},
		{"ES384 header on an ES256 key", bearer(es384)},
		{"signature stripped", bearer(parts[0] + "." + parts[1] + ".")},
		{"signature missing", bearer(parts[0] + "." + parts[1])},
		{"one signature bit flipped", bearer(flipped)},
		{"payload swapped", bearer(parts[0] + "." + b64(mustJSON(with(validClaims(), map[string]any{"sub": "someone-else"}))) + "." + parts[2])},
		{"issuer with a trailing slash", bearer(h.key.mint(t, with(validClaims(), map[string]any{"iss": testIssuer + "/"})))},
		{"issuer over http", bearer(h.key.mint(t, with(validClaims(), map[string]any{"iss": strings.Replace(testIssuer, "https", "http", 1)})))},
		{"audience missing", bearer(h.key.mint(t, with(validClaims(), map[string]any{"aud": nil})))},
		{"audience wrong", bearer(h.key.mint(t, with(validClaims(), map[string]any{"aud": "anon"})))},
		{"exp missing", bearer(h.key.mint(t, with(validClaims(), map[string]any{"exp": nil})))},
		{"expired beyond leeway", bearer(h.key.mint(t, with(validClaims(), map[string]any{"exp": now.Add(-Leeway - 5*time.Second).Unix()})))},
		{"nbf in the future", bearer(h.key.mint(t, with(validClaims(), map[string]any{"nbf": now.Add(2 * time.Minute).Unix()})))},
		{"iat in the future", bearer(h.key.mint(t, with(validClaims(), map[string]any{"iat": now.Add(2 * time.Minute).Unix()})))},
		{"sub missing", bearer(h.key.mint(t, with(validClaims(), map[string]any{"sub": nil})))},
		{"unknown kid of another key", bearer(other.mint(t, validClaims()))},
		{"kid of the wrong JSON type", bearer(func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodES256, validClaims())
			tok.Header["kid"] = 42
			s, _ := tok.SignedString(h.key.private)
			return s
		}())},
		{"jku and x5u pointing elsewhere", bearer(jkuToken)},
		{"embedded jwk", bearer(embeddedJWK)},
		{"malformed: two segments", bearer("abc.def")},
		{"malformed: four segments", bearer(good + ".extra")},
		{"malformed: not base64", bearer("!!!.@@@.###")},
		{"malformed: header not JSON", bearer(b64([]byte("nope")) + "." + parts[1] + "." + parts[2])},
		{"Basic scheme", "Basic " + base64.StdEncoding.EncodeToString([]byte("user:pass"))},
		{"token without a scheme", good},
		{"empty bearer", "Bearer "},
		{"bare Bearer", "Bearer"},
		{"two tokens", "Bearer " + good + " " + good},
		{"no header", ""},
		{"unknown service key", "Bearer tgk_" + strings.Repeat("A", 43)},
		{"service key prefix alone", "Bearer tgk_"},
	}
	var reached atomic.Int64
	guarded := readCredential(Authenticate(h.verifier, h.serviceKeys, slog.New(slog.NewTextHandler(h.logs, nil)), nil)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		reached.Add(1)
	})))
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/api/v1/me", nil)
			if a.authorization != "" {
				req.Header.Set("Authorization", a.authorization)
			}
			rec := httptest.NewRecorder()
			guarded.ServeHTTP(rec, req)
			mustStatus(t, rec, http.StatusUnauthorized)
			if reached.Load() != 0 {
				t.Fatal("the handler ran")
			}
			challenge := rec.Header().Get("WWW-Authenticate")
			if !strings.HasPrefix(challenge, "Bearer") {
				t.Fatalf("WWW-Authenticate %q", challenge)
			}
			sentBearer := strings.HasPrefix(strings.ToLower(a.authorization), "bearer")
			if strings.Contains(challenge, `error="invalid_token"`) != sentBearer {
				t.Fatalf("challenge %q for authorization %q", challenge, a.authorization)
			}
			if rec.Header().Get("Content-Type") != "application/problem+json" || strings.Contains(rec.Body.String(), "jwt") ||
				strings.Contains(rec.Body.String(), "crypto") {
				t.Fatalf("body %s", rec.Body)
			}
		})
	}
	if n := attacker.requests.Load(); n != 0 {
		t.Fatalf("the attacker's key set was fetched %d times", n)
	}

	// And through the whole tree: the same refusal before any handler.
	mustStatus(t, h.me(bearer(flipped)), http.StatusUnauthorized)

	accepted := []struct{ name, authorization string }{
		{"Bearer", bearer(good)},
		{"bearer in lower case", "bearer " + good},
		{"BEARER in upper case", "BEARER " + good},
		{"expired within leeway", bearer(h.key.mint(t, with(validClaims(), map[string]any{"exp": now.Add(-10 * time.Second).Unix()})))},
		{"nbf within leeway", bearer(h.key.mint(t, with(validClaims(), map[string]any{"nbf": now.Add(10 * time.Second).Unix()})))},
		{"aud as a list", bearer(h.key.mint(t, with(validClaims(), map[string]any{"aud": []string{"other", testAudience}})))},
	}
	for _, a := range accepted {
		t.Run("accepts "+a.name, func(t *testing.T) {
			mustStatus(t, h.me(a.authorization), http.StatusOK)
		})
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func TestLegacyHS256OnlyWithItsSecret(t *testing.T) {
	const secret = "legacy-jwt-secret-at-least-32-bytes-long"
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, validClaims())
	signed, _ := tok.SignedString([]byte(secret))
	without := newHarness(t, harnessConfig{})
	mustStatus(t, without.me(bearer(signed)), http.StatusUnauthorized)
	withSecret := newHarness(t, harnessConfig{hsSecret: secret})
	mustStatus(t, withSecret.me(bearer(signed)), http.StatusOK)
	wrongIssuer, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, with(validClaims(), map[string]any{"iss": "https://elsewhere"})).SignedString([]byte(secret))
	mustStatus(t, withSecret.me(bearer(wrongIssuer)), http.StatusUnauthorized)
}

func TestHugeTokenIsRefusedCheaply(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	dots := "Bearer " + strings.Repeat(".", 1<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	rec := h.me(dots)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	mustStatus(t, rec, http.StatusUnauthorized)
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 256<<10 {
		t.Fatalf("refusing a 1 MiB token allocated %d bytes", allocated)
	}
	t.Logf("refused in %v", elapsed)
}
