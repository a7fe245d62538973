package api

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/adapty"
	"github.com/tollgate/tollgate/internal/billing/checkout"
	"github.com/tollgate/tollgate/internal/billing/grant"
	"github.com/tollgate/tollgate/internal/billing/grants"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/heldanswers"
	"github.com/tollgate/tollgate/internal/logcapture"
	"github.com/tollgate/tollgate/internal/ratelimit"
	"github.com/tollgate/tollgate/internal/servicekeys"
	"github.com/tollgate/tollgate/internal/signingkeys"
)

const (
	testIssuer   = "https://project.example.test/auth/v1"
	testAudience = "authenticated"
	testUser     = "5a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d"
)

// signingKey is a key the fake identity service signs with, and its public JWK.
type signingKey struct {
	kid     string
	alg     jwt.SigningMethod
	private crypto.Signer
}

func newECKey(t testing.TB, kid string) signingKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid: kid, alg: jwt.SigningMethodES256, private: k}
}

func newRSAKey(t testing.TB, kid string) signingKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid: kid, alg: jwt.SigningMethodRS256, private: k}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// jwk is the public key as the identity service publishes it.
func (k signingKey) jwk() map[string]any {
	switch pub := k.private.Public().(type) {
	case *ecdsa.PublicKey:
		x, y := make([]byte, 32), make([]byte, 32)
		pub.X.FillBytes(x)
		pub.Y.FillBytes(y)
		return map[string]any{"kty": "EC", "crv": "P-256", "x": b64(x), "y": b64(y), "kid": k.kid, "alg": "ES256", "use": "sig", "key_ops": []string{"verify"}}
	case *rsa.PublicKey:
		return map[string]any{"kty": "RSA", "n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes()), "kid": k.kid, "alg": "RS256", "use": "sig"}
	}
	panic("unknown key type")
}

// validClaims are an identity-service access token's claims, valid now.
func validClaims() jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss": testIssuer, "sub": testUser, "aud": testAudience,
		"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(),
		"email": "user42@example.test", "phone": "", "role": "authenticated", "aal": "aal1",
		"amr":        []map[string]any{{"method": "password", "timestamp": now.Unix()}},
		"session_id": "0f6b0d0e-6a4c-4a0e-9d56-0b1b5f1f3a11", "is_anonymous": false,
		"app_metadata": map[string]any{"provider": "email", "providers": []string{"email"}}, "user_metadata": map[string]any{},
	}
}

func (k signingKey) mint(t testing.TB, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(k.alg, claims)
	tok.Header["kid"] = k.kid
	s, err := tok.SignedString(k.private)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// jwksServer is the identity service's key set endpoint: its keys can be swapped, it can be
// taken down, and it counts requests.
type jwksServer struct {
	*httptest.Server
	mu       sync.Mutex
	keys     []signingKey
	down     bool
	requests atomic.Int64
}

func newJWKSServer(t testing.TB, keys ...signingKey) *jwksServer {
	s := &jwksServer{keys: keys}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		var set []map[string]any
		for _, k := range s.keys {
			set = append(set, k.jwk())
		}
		w.Header().Set("Cache-Control", "public, max-age=600")
		json.NewEncoder(w).Encode(map[string]any{"keys": set})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) setKeys(keys ...signingKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = keys
}

func (s *jwksServer) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

type harness struct {
	t           testing.TB
	jwks        *jwksServer
	keys        *KeySet
	verifier    *Verifier
	billing     *reader.Reader
	pipeline    *pipeline.Pipeline
	serviceKeys *servicekeys.Keys
	held        *heldanswers.Issuer
	signingKeys *signingkeys.Keys
	handler     http.Handler
	logs        *logcapture.Buffer
	key         signingKey
	throttles   *ratelimit.Throttles
}

type harnessConfig struct {
	db        *db.DB
	keySet    KeySetOptions
	throttles ratelimit.Options
	cors      CORS
	perIP     ratelimit.Limit
	perToken  ratelimit.Limit
	hsSecret  string
	// checkout, when set, gives billing a web provider API (checkout and portal).
	checkout *checkout.Options
	// answersMaxAge keeps answers in memory, as serve does.
	answersMaxAge time.Duration
	// adapters are providers beside the web and mobile ones (the App Store's).
	adapters []billing.Adapter
	plans    string // the plans file; a free default plan when empty
	// clock is billing's clock (reads are ordered by it); nil: the real one.
	clock func() time.Time
}

// newHarness serves the API's real handler tree (throttles, verification, huma) over a fake
// identity service's JWKS and a real database.
func newHarness(t testing.TB, cfg harnessConfig) *harness {
	t.Helper()
	h := &harness{t: t, logs: &logcapture.Buffer{}, key: newECKey(t, "key-1")}
	log := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.jwks = newJWKSServer(t, h.key)
	cfg.keySet.Log = log
	h.keys = NewKeySet(h.jwks.URL, cfg.keySet)
	h.verifier = NewVerifier(h.keys, VerifierOptions{Issuer: testIssuer, Audience: testAudience, HS256Secret: cfg.hsSecret})
	d := cfg.db
	if d == nil {
		d = dbtest.SQLite(t)
	}
	h.billing = reader.New(d, log, reader.Options{AnswersMaxAge: cfg.answersMaxAge})
	h.pipeline = pipeline.New(d, log, pipeline.Options{Adapters: append([]billing.Adapter{stripe.New(""), adapty.New("", nil), grant.New()}, cfg.adapters...), Clock: cfg.clock})
	h.pipeline.OnCommit(h.billing.Forget)
	checkoutOpts := checkout.Options{}
	if cfg.checkout != nil {
		checkoutOpts = *cfg.checkout
		checkoutOpts.Applier = h.pipeline
	}
	purchases := checkout.New(d, log, h.billing, checkoutOpts)
	h.serviceKeys = servicekeys.New(d)
	h.signingKeys = signingkeys.New(d, nil)
	h.held = heldanswers.New(heldanswers.Options{Answers: h.billing, Keys: h.signingKeys, Issuer: "https://billing.example.test",
		Audience: "tollgate", TTL: 15 * time.Minute, Log: log})
	if cfg.plans == "" {
		cfg.plans = `
plans:
  free:
    default: true
    entitlements:
      - {name: projects, value: 2}
      - {name: exports, value: false}
`
	}
	list, err := plans.ParsePlans([]byte(cfg.plans))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plans.Sync(context.Background(), d, list, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	cfg.throttles.Log = log
	h.throttles, err = ratelimit.New(cfg.throttles)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.throttles.Close() })
	mux := http.NewServeMux()
	New(Options{Billing: h.billing, Checkout: purchases, Purchases: h.pipeline, PurchaseStores: []string{"appstore", "playstore"}, Grants: grants.New(d, h.pipeline, log, cfg.clock), Verifier: h.verifier, Keys: h.serviceKeys, HeldAnswers: h.held, Throttles: h.throttles, CORS: cfg.cors, SwaggerUI: true, Log: log,
		PerIP: cfg.perIP, PerToken: cfg.perToken}).Routes(mux)
	h.handler = mux
	return h
}

// do sends a request through the handler tree from a client address.
func (h *harness) do(method, path, authorization string, body io.Reader, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, body)
	req.RemoteAddr = "203.0.113.7:41000"
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, req)
	return rec
}

func (h *harness) me(authorization string) *httptest.ResponseRecorder {
	return h.do(http.MethodGet, "/api/v1/me", authorization, nil)
}

func bearer(token string) string { return "Bearer " + token }

func mustStatus(t testing.TB, rec *httptest.ResponseRecorder, want int) {
	t.Helper()
	if rec.Code != want {
		t.Fatalf("status %d, want %d: %s", rec.Code, want, rec.Body)
	}
}

func problemType(rec *httptest.ResponseRecorder) string {
	var p struct{ Type string }
	json.Unmarshal(rec.Body.Bytes(), &p)
	return p.Type[strings.LastIndex(p.Type, "/")+1:]
}

// ingest applies a verified event through the billing pipeline, as its webhook would.
func (h *harness) ingest(provider, id, eventType string, body []byte) (pipeline.Processed, error) {
	return h.pipeline.Ingest(context.Background(), provider, billing.Event{ID: id, Type: eventType}, body)
}
