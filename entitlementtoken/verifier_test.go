package entitlementtoken_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate/tollgate/entitlementtoken"
	"github.com/tollgate/tollgate/tollgatetest"
)

func issuer(t testing.TB) *tollgatetest.EntitlementIssuer {
	t.Helper()
	i, err := tollgatetest.NewEntitlementIssuer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(i.Close)
	return i
}

func pro() entitlementtoken.Billing {
	status, provider := "active", "web"
	return entitlementtoken.Billing{Subscribed: true, Status: &status, Provider: &provider,
		Plan: &entitlementtoken.Plan{Key: "pro", Name: "Pro"}, Entitlements: map[string]any{"export": true, "projects": 10}}
}

func mint(t testing.TB, i *tollgatetest.EntitlementIssuer, ttl time.Duration) string {
	t.Helper()
	token, err := i.Mint("2b7c3f0e-0000-4000-8000-000000000001", pro(), ttl)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// keySetServer serves the issuer's key set, counting reads, and fails them while down.
type keySetServer struct {
	*httptest.Server
	reads atomic.Int32
	down  atomic.Bool
}

func serveKeySet(t testing.TB, i *tollgatetest.EntitlementIssuer) *keySetServer {
	s := &keySetServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.reads.Add(1)
		if s.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		resp, err := http.Get(i.JWKSURL)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Cache-Control", resp.Header.Get("Cache-Control"))
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(s.Close)
	return s
}

func verifier(t testing.TB, opts entitlementtoken.Options) *entitlementtoken.Verifier {
	t.Helper()
	v, err := entitlementtoken.NewVerifier(opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestAGoodTokenVerifies: the token says the user and their billing, typed.
func TestAGoodTokenVerifies(t *testing.T) {
	t.Parallel()
	i := issuer(t)
	e, err := verifier(t, i.Options()).Verify(context.Background(), mint(t, i, 15*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if e.UserID != "2b7c3f0e-0000-4000-8000-000000000001" || e.Billing.PlanKey() != "pro" || !e.Billing.Entitled("export") || e.Billing.Entitled("sso") {
		t.Fatalf("verified %+v", e)
	}
	if limit, ok := e.Billing.Limit("projects"); !ok || limit != 10 || e.ExpiresAt.Sub(e.IssuedAt) != 15*time.Minute {
		t.Fatalf("limit %d %v, life %v", limit, ok, e.ExpiresAt.Sub(e.IssuedAt))
	}
}

// TestForgeriesAreRefused: a token signed by another key under the same kid, with alg
// none, with HS256 keyed by the public key, for another issuer or audience, expired past
// the leeway, pointing at a key set of its own (jku), or without billing is refused.
func TestForgeriesAreRefused(t *testing.T) {
	t.Parallel()
	i, other := issuer(t), issuer(t)
	v := verifier(t, i.Options())
	now := time.Now()
	claims := func(edit func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"iss": i.Issuer, "sub": "u", "aud": i.Audience, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "billing": pro()}
		if edit != nil {
			edit(c)
		}
		return c
	}
	jwks, err := http.Get(i.JWKSURL) // the public key's bytes, as an attacker would key HS256 with them
	if err != nil {
		t.Fatal(err)
	}
	public, _ := io.ReadAll(jwks.Body)
	jwks.Body.Close()
	none := jwt.NewWithClaims(jwt.SigningMethodNone, claims(nil))
	none.Header["kid"] = "tollgatetest-1"
	noneToken, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, claims(nil))
	hs.Header["kid"] = "tollgatetest-1"
	hsToken, _ := hs.SignedString(public)
	for name, token := range map[string]string{
		"another key, same kid":     mint(t, other, time.Minute),
		"alg none":                  noneToken,
		"HS256 with the public key": hsToken,
		"another issuer":            signed(t, other, claims(func(c jwt.MapClaims) { c["iss"] = "https://evil.test" }), nil),
		"wrong issuer":              signedBy(t, i, claims(func(c jwt.MapClaims) { c["iss"] = "https://evil.test" })),
		"wrong audience":            signedBy(t, i, claims(func(c jwt.MapClaims) { c["aud"] = "authenticated" })),
		"expired":                   signedBy(t, i, claims(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() })),
		"no exp":                    signedBy(t, i, claims(func(c jwt.MapClaims) { delete(c, "exp") })),
		"no billing":                signedBy(t, i, claims(func(c jwt.MapClaims) { delete(c, "billing") })),
		"a jku of its own":          signed(t, other, claims(nil), map[string]any{"jku": other.JWKSURL, "kid": "elsewhere"}),
		"not a JWS":                 "not.a.token",
	} {
		if _, err := v.Verify(context.Background(), token); !errors.Is(err, entitlementtoken.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	// Within the leeway an exp just passed still verifies.
	if _, err := v.Verify(context.Background(), signedBy(t, i, claims(func(c jwt.MapClaims) { c["exp"] = now.Add(-10 * time.Second).Unix() }))); err != nil {
		t.Errorf("10 s past exp, inside the leeway: %v", err)
	}
}

// signedBy signs claims with i's key, as i's own tokens are.
func signedBy(t *testing.T, i *tollgatetest.EntitlementIssuer, claims jwt.MapClaims) string {
	return signed(t, i, claims, nil)
}

// signed signs claims with i's key (through a token i minted, to reach its key) and the
// extra header fields.
func signed(t *testing.T, i *tollgatetest.EntitlementIssuer, claims jwt.MapClaims, header map[string]any) string {
	t.Helper()
	token, err := i.Sign(claims, header)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// TestTheKeySetIsReadOnNeed: an unknown kid reads the set again at most every 30 s; a read
// that fails keeps the set held, so tokens go on verifying through an outage; with no set
// held the error is ErrKeySet.
func TestTheKeySetIsReadOnNeed(t *testing.T) {
	t.Parallel()
	i := issuer(t)
	s := serveKeySet(t, i)
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	opts := i.Options()
	opts.JWKSURL, opts.Now = s.URL, func() time.Time { return time.Unix(0, now.Load()) }
	v := verifier(t, opts)
	ctx := context.Background()
	if _, err := v.Verify(ctx, mint(t, i, time.Hour)); err != nil || s.reads.Load() != 1 {
		t.Fatalf("first: %v, %d reads", err, s.reads.Load())
	}
	unknown := signed(t, i, jwt.MapClaims{"iss": i.Issuer, "sub": "u", "aud": i.Audience, "exp": time.Now().Add(time.Hour).Unix(), "billing": pro()},
		map[string]any{"kid": "forged"})
	for range 5 {
		if _, err := v.Verify(ctx, unknown); !errors.Is(err, entitlementtoken.ErrInvalid) {
			t.Fatalf("unknown kid: %v", err)
		}
	}
	if reads := s.reads.Load(); reads != 1 {
		t.Fatalf("%d reads for unknown kids within 30 s of the first, want none", reads-1)
	}
	now.Add(int64(31 * time.Second))
	v.Verify(ctx, unknown)
	if reads := s.reads.Load(); reads != 2 {
		t.Fatalf("%d reads, want one more after 30 s", reads)
	}
	s.down.Store(true)
	now.Add(int64(10 * time.Minute)) // the set is stale, and tollgate is down
	for range 3 {
		if _, err := v.Verify(ctx, mint(t, i, time.Hour)); err != nil {
			t.Fatalf("through an outage: %v", err)
		}
	}
	cold := verifier(t, opts)
	if _, err := cold.Verify(ctx, mint(t, i, time.Hour)); !errors.Is(err, entitlementtoken.ErrKeySet) {
		t.Fatalf("no set held and none readable: %v", err)
	}
}

// TestAVerifiedTokenIsKeptUntilItsExp: seen again, a token is answered from memory until
// its exp (and the leeway), then refused.
func TestAVerifiedTokenIsKeptUntilItsExp(t *testing.T) {
	t.Parallel()
	i := issuer(t)
	s := serveKeySet(t, i)
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	opts := i.Options()
	opts.JWKSURL, opts.Now = s.URL, func() time.Time { return time.Unix(0, now.Load()) }
	v := verifier(t, opts)
	token := mint(t, i, time.Minute)
	for range 3 {
		if _, err := v.Verify(context.Background(), token); err != nil {
			t.Fatal(err)
		}
	}
	now.Add(int64(time.Minute + entitlementtoken.Leeway + time.Second))
	if _, err := v.Verify(context.Background(), token); !errors.Is(err, entitlementtoken.ErrInvalid) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("after exp: %v", err)
	}
}

// TestThePackageStandsAlone: the verifier needs the standard library and one JOSE library,
// nothing else of tollgate's (a backend imports it without the rest).
func TestThePackageStandsAlone(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Deps "\n"}}`, "github.com/tollgate/tollgate/entitlementtoken").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		first, _, _ := strings.Cut(dep, "/")
		if strings.Contains(first, ".") && !strings.HasPrefix(dep, "github.com/golang-jwt/jwt/v5") {
			t.Errorf("entitlementtoken depends on %s", dep)
		}
	}
}
