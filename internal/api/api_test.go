package api

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/tollgate/tollgate/internal/ratelimit"
	"github.com/tollgate/tollgate/internal/stores"
	"github.com/tollgate/tollgate/internal/tcpproxy"
	"github.com/tollgate/tollgate/swagger"
)

func TestMeAndUsage(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	token := bearer(h.key.mint(t, validClaims()))

	rec := h.me(token)
	mustStatus(t, rec, http.StatusOK)
	var me struct {
		User    map[string]any `json:"user"`
		Billing map[string]any `json:"billing"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &me); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"id": testUser, "email": "user42@example.test", "role": "authenticated", "aal": "aal1",
		"session_id": "0f6b0d0e-6a4c-4a0e-9d56-0b1b5f1f3a11", "is_anonymous": false} {
		if me.User[k] != want {
			t.Errorf("user.%s = %v, want %v", k, me.User[k], want)
		}
	}
	for _, k := range []string{"phone", "app_metadata", "user_metadata"} {
		if _, ok := me.User[k]; !ok {
			t.Errorf("user.%s missing", k)
		}
	}
	b := me.Billing
	if b["subscribed"] != false || b["status"] != nil || b["provider"] != nil || b["current_period_end"] != nil {
		t.Errorf("billing without a subscription: %v", b)
	}
	if plan, _ := b["plan"].(map[string]any); plan["key"] != "free" || plan["name"] != "free" {
		t.Errorf("plan %v, want the default plan", b["plan"])
	}
	if ent, _ := b["entitlements"].(map[string]any); ent["projects"] != float64(2) || ent["exports"] != false {
		t.Errorf("entitlements %v", b["entitlements"])
	}
	if strings.Contains(rec.Body.String(), "$schema") {
		t.Error("response carries a $schema link")
	}

	use := func(body string) *httptest.ResponseRecorder {
		return h.do(http.MethodPost, "/api/v1/usage/projects", token, strings.NewReader(body), "Content-Type", "application/json")
	}
	rec = use(`{"amount": 1}`)
	mustStatus(t, rec, http.StatusOK)
	var u map[string]any
	json.Unmarshal(rec.Body.Bytes(), &u)
	if u["name"] != "projects" || u["used"] != float64(1) || u["limit"] != float64(2) || u["remaining"] != float64(1) || u["period_end"] == nil {
		t.Fatalf("usage %s", rec.Body)
	}
	mustStatus(t, h.do(http.MethodPost, "/api/v1/usage/projects", token, nil), http.StatusOK) // no body: amount 1
	rec = use(`{"amount": 1}`)
	mustStatus(t, rec, http.StatusForbidden)
	if problemType(rec) != "limit-exceeded" || rec.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("over the limit: %s %s", rec.Header().Get("Content-Type"), rec.Body)
	}
	rec = h.do(http.MethodPost, "/api/v1/usage/exports", token, strings.NewReader(`{}`), "Content-Type", "application/json")
	mustStatus(t, rec, http.StatusForbidden)
	if problemType(rec) != "not-entitled" || strings.Contains(rec.Body.String(), "nothing was recorded") {
		t.Fatalf("no such entitlement at all: %s", rec.Body)
	}
	for _, body := range []string{`{"amount": 0}`, `{"amount": "x"}`} {
		rec = use(body)
		mustStatus(t, rec, http.StatusUnprocessableEntity)
		if problemType(rec) != "invalid-request" {
			t.Fatalf("a 422 without tollgate's problem type: %s", rec.Body)
		}
	}

	rec = h.me(bearer(h.key.mint(t, validClaims()))) // usage appears on /me
	json.Unmarshal(rec.Body.Bytes(), &me)
	if usage, _ := me.Billing["usage"].(map[string]any)["projects"].(map[string]any); usage["used"] != float64(2) || usage["limit"] != float64(2) {
		t.Fatalf("usage on /me: %v", me.Billing["usage"])
	}

	rec = h.me("")
	mustStatus(t, rec, http.StatusUnauthorized)
	if got := rec.Header().Get("WWW-Authenticate"); got != `Bearer realm="api"` {
		t.Fatalf("challenge without a token: %q", got)
	}
	mustStatus(t, h.do(http.MethodGet, "/api/v1/nothing", token, nil), http.StatusNotFound)
}

func TestThrottles(t *testing.T) {
	h := newHarness(t, harnessConfig{keySet: KeySetOptions{UnknownKIDInterval: time.Millisecond}})
	token := bearer(h.key.mint(t, validClaims()))
	for i := range ratelimit.PerIP.Requests {
		if rec := h.me(token); rec.Code != http.StatusOK {
			t.Fatalf("request %d: %d", i+1, rec.Code)
		}
	}
	// The 301st carries a token with an unknown kid: had it reached verification, the key
	// set would have been fetched.
	fetches := h.jwks.requests.Load()
	rec := h.me(bearer(newECKey(t, "never-seen").mint(t, validClaims())))
	mustStatus(t, rec, http.StatusTooManyRequests)
	if problemType(rec) != "rate-limited" || rec.Header().Get("RateLimit-Limit") != "300" || rec.Header().Get("RateLimit-Remaining") != "0" {
		t.Fatalf("429 %v %s", rec.Header(), rec.Body)
	}
	// IETF RateLimit header fields: RateLimit-Reset is seconds until the window resets (not
	// a time), and Retry-After says the same in whole seconds, at least 1.
	window := int64(ratelimit.PerIP.Window / time.Second)
	reset, errReset := strconv.ParseInt(rec.Header().Get("RateLimit-Reset"), 10, 64)
	retry, errRetry := strconv.ParseInt(rec.Header().Get("Retry-After"), 10, 64)
	if errReset != nil || errRetry != nil || reset < 0 || reset > window || retry < 1 || retry > window || retry != max(1, reset) {
		t.Fatalf("RateLimit-Reset %q, Retry-After %q: want seconds within the %d s window", rec.Header().Get("RateLimit-Reset"), rec.Header().Get("Retry-After"), window)
	}

	if h.jwks.requests.Load() != fetches {
		t.Fatal("a throttled request reached the key set")
	}
	// Another client is unaffected.
	req := httptest.NewRequest(http.MethodGet, "/api/v1/me", nil)
	req.RemoteAddr = "198.51.100.9:5000"
	req.Header.Set("Authorization", token)
	other := httptest.NewRecorder()
	h.handler.ServeHTTP(other, req)
	mustStatus(t, other, http.StatusOK)
	if reset, err := strconv.ParseInt(other.Header().Get("RateLimit-Reset"), 10, 64); err != nil || reset < 0 || reset > window {
		t.Fatalf("RateLimit-Reset on a 200: %q", other.Header().Get("RateLimit-Reset"))
	}
}

// TestPerTokenThrottle: a token past its limit is refused, another token is not. The
// limit's window is a day, so that the requests never straddle a window's start (a
// sliding count across two windows weighs the earlier one down, and would let one more by).
func TestPerTokenThrottle(t *testing.T) {
	perToken := ratelimit.Limit{Name: "api/token", Requests: 200, Window: 24 * time.Hour}
	h := newHarness(t, harnessConfig{perIP: ratelimit.Limit{Name: "api/ip", Requests: 100_000, Window: time.Minute}, perToken: perToken})
	token := bearer(h.key.mint(t, validClaims()))
	for i := range perToken.Requests {
		if rec := h.me(token); rec.Code != http.StatusOK {
			t.Fatalf("request %d: %d", i+1, rec.Code)
		}
	}
	mustStatus(t, h.me(token), http.StatusTooManyRequests)
	mustStatus(t, h.me(bearer(h.key.mint(t, with(validClaims(), map[string]any{"jti": "another"})))), http.StatusOK)
}

func redisAddr(t *testing.T) string {
	addr := os.Getenv("TEST_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Redis at %s unreachable in CI: %v", addr, err)
		}
		t.Skipf("Redis at %s unreachable: %v", addr, err)
	}
	conn.Close()
	return addr
}

func randomPrefix() string {
	var b [6]byte
	rand.Read(b[:])
	return "tollgate-test:" + hex.EncodeToString(b[:])
}

func TestThrottlesSharedThroughRedis(t *testing.T) {
	addr := redisAddr(t)
	prefix := randomPrefix()
	opts := ratelimit.Options{RedisURL: "redis://" + addr, KeyPrefix: prefix}
	a := newHarness(t, harnessConfig{throttles: opts})
	b := newHarness(t, harnessConfig{throttles: opts})
	b.jwks.setKeys(a.key) // one identity service behind both instances
	token := bearer(a.key.mint(t, validClaims()))
	for i := range ratelimit.PerIP.Requests {
		instance := a
		if i%2 == 1 {
			instance = b
		}
		if rec := instance.me(token); rec.Code != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, rec.Code, rec.Body)
		}
	}
	mustStatus(t, a.me(token), http.StatusTooManyRequests)
	mustStatus(t, b.me(token), http.StatusTooManyRequests)
}

func TestRedisOutageFailsOpen(t *testing.T) {
	proxy := tcpproxy.New(t, redisAddr(t))
	h := newHarness(t, harnessConfig{throttles: ratelimit.Options{RedisURL: "redis://" + proxy.Addr, KeyPrefix: randomPrefix()}})
	token := bearer(h.key.mint(t, validClaims()))
	mustStatus(t, h.me(token), http.StatusOK)
	proxy.Cut()
	for range 20 {
		mustStatus(t, h.me(token), http.StatusOK)
	}
	if n := strings.Count(h.logs.String(), "Redis unreachable"); n != 1 {
		t.Fatalf("the Redis warning was logged %d times, want once:\n%s", n, h.logs.String())
	}
	proxy.Start()
	waitUntil(t, 5*time.Second, func() bool { return strings.Contains(h.logs.String(), "Redis reachable again") })
	mustStatus(t, h.me(token), http.StatusOK)
}

func TestCORS(t *testing.T) {
	origins := []string{"https://app.example.com", "https://evil.example", "http://localhost:3000"}
	cases := []struct {
		name    string
		cors    CORS
		allowed map[string]bool
	}{
		{"production without CORS_ORIGINS", CORS{}, map[string]bool{}},
		{"with CORS_ORIGINS", CORS{Origins: []string{"https://app.example.com"}}, map[string]bool{"https://app.example.com": true}},
		{"development default", CORS{AnyLocalhost: true}, map[string]bool{"http://localhost:3000": true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessConfig{cors: tc.cors})
			token := bearer(h.key.mint(t, validClaims()))
			for _, origin := range origins {
				preflight := h.do(http.MethodOptions, "/api/v1/me", "", nil, "Origin", origin, "Access-Control-Request-Method", "GET",
					"Access-Control-Request-Headers", "authorization")
				simple := h.do(http.MethodGet, "/api/v1/me", token, nil, "Origin", origin)
				for kind, rec := range map[string]*httptest.ResponseRecorder{"preflight": preflight, "request": simple} {
					got := rec.Header().Get("Access-Control-Allow-Origin")
					if tc.allowed[origin] && got != origin {
						t.Errorf("%s from %s: Allow-Origin %q, want it allowed", kind, origin, got)
					}
					if !tc.allowed[origin] && got != "" {
						t.Errorf("%s from %s: Allow-Origin %q, want none", kind, origin, got)
					}
					if rec.Header().Get("Access-Control-Allow-Credentials") != "" {
						t.Errorf("credentials allowed")
					}
				}
			}
		})
	}
}

func TestAPIDocsAreSelfContained(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	for _, path := range []string{"/api-docs", "/api-docs/"} {
		rec := h.do(http.MethodGet, path, "", nil)
		mustStatus(t, rec, http.StatusOK)
		html := rec.Body.String()
		if !strings.Contains(html, "swagger") {
			t.Fatalf("%s is not the Swagger UI page", path)
		}
		external := regexp.MustCompile(`(?i)<(script|link)[^>]+(src|href)=["']?(https?:)?//`)
		if m := external.FindString(html); m != "" {
			t.Fatalf("%s loads an external script or style: %s", path, m)
		}
		for _, asset := range regexp.MustCompile(`(?:src|href)="([^"]+\.(?:js|css))"`).FindAllStringSubmatch(html, -1) {
			if rec := h.do(http.MethodGet, asset[1], "", nil); rec.Code != http.StatusOK {
				t.Errorf("asset %s: %d", asset[1], rec.Code)
			}
		}
	}
	rec := h.do(http.MethodGet, "/api-docs/swagger.yaml", "", nil)
	mustStatus(t, rec, http.StatusOK)
	if !strings.Contains(rec.Body.String(), "/api/v1/me") {
		t.Fatal("swagger.yaml does not describe /api/v1/me")
	}
}

var update = flag.Bool("update", false, "rewrite swagger/v1/swagger.yaml")

// TestSwaggerFileIsCurrent regenerates the OpenAPI description from the registered
// operations and fails if the committed file differs (-update rewrites it).
func TestSwaggerFileIsCurrent(t *testing.T) {
	api := humago.New(http.NewServeMux(), Config())
	New(Options{PurchaseStores: stores.All().Claiming()}).register(api) // the binary's list
	generated, err := api.OpenAPI().YAML()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("../../swagger/v1/swagger.yaml", generated, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(generated) != string(swagger.V1) {
		t.Fatal("swagger/v1/swagger.yaml is stale: run go test ./internal/api -run TestSwaggerFileIsCurrent -update")
	}
}

// TestSeveralAuthorizationHeadersAreRefused: with two Authorization headers, even two
// valid ones, none is believed.
func TestSeveralAuthorizationHeadersAreRefused(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	valid := bearer(h.key.mint(t, validClaims()))
	mustStatus(t, h.me(valid), http.StatusOK)
	for _, pair := range [][2]string{{valid, valid}, {valid, "Bearer not-a-token"}, {"Bearer not-a-token", valid}} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/me", nil)
		req.RemoteAddr = "203.0.113.7:41000"
		req.Header["Authorization"] = pair[:]
		rec := httptest.NewRecorder()
		h.handler.ServeHTTP(rec, req)
		mustStatus(t, rec, http.StatusUnauthorized)
		if got := rec.Header().Get("WWW-Authenticate"); !strings.Contains(got, `error="invalid_token"`) || problemType(rec) != "unauthorized" {
			t.Fatalf("two Authorization headers: %q %s", got, rec.Body)
		}
	}
}
