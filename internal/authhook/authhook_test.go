package authhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tollgate/tollgate/internal/logcapture"
)

var (
	secret      = []byte("0123456789abcdef0123456789abcdef")
	otherSecret = []byte("fedcba9876543210fedcba9876543210")
)

// whsec is a secret as the identity service shows it.
func whsec(s []byte) string { return "whsec_" + base64.StdEncoding.EncodeToString(s) }

// claimsFor answers a fixed claim, fails, or is slow.
type claimsFor struct {
	claim json.RawMessage
	err   error
	delay time.Duration
}

func (c claimsFor) Claim(ctx context.Context, _ string) (json.RawMessage, error) {
	select {
	case <-time.After(c.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return c.claim, c.err
}

// supabaseInput is a request as Supabase Auth sends it: metadata too, claims in its order.
const supabaseInput = `{"metadata":{"uuid":"8d5a","time":"2026-11-29T05:00:00Z","name":"custom_access_token","ip_address":"127.0.0.1"},` +
	`"user_id":"2b7c3f0e-0000-4000-8000-000000000001",` +
	`"claims":{"aud":"authenticated","exp":1796000000,"iat":1795996400,"iss":"http://127.0.0.1:9999","sub":"2b7c3f0e-0000-4000-8000-000000000001","email":"pro@example.test","phone":"","app_metadata":{"provider":"email","providers":["email"]},"user_metadata":{"email_verified":true},"role":"authenticated","aal":"aal1","amr":[{"method":"password","timestamp":1795996400}],"session_id":"c1d2","is_anonymous":false},` +
	`"authentication_method":"password"}`

const claim = `{"subscribed":true,"status":"active","provider":"web","plan":{"key":"pro","name":"Pro"},"current_period_end":"2026-12-29T00:00:00Z","entitlements":{"export":true},"valid_until":1798502400}`

// signedRequest is body as Supabase Auth sends it: one signature per secret in one header,
// joined by ", ", timestamped at.
func signedRequest(t *testing.T, body string, at time.Time, secrets ...[]byte) *http.Request {
	t.Helper()
	id := "msg_2b7c3f0e"
	var signatures []string
	for _, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(whsec(s))
		if err != nil {
			t.Fatal(err)
		}
		sig, err := wh.Sign(id, at, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		signatures = append(signatures, sig)
	}
	req := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
	req.Header.Set("webhook-signature", strings.Join(signatures, ", "))
	return req
}

func serve(h *Hook, req *http.Request) *httptest.ResponseRecorder {
	mux := http.NewServeMux()
	h.Routes(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	return rec
}

func newHook(c Claims, logs *logcapture.Buffer, secrets ...[]byte) *Hook {
	return New(Options{Claims: c, Secrets: secrets, MaxBody: 1 << 20, Log: slog.New(slog.NewJSONHandler(logs, nil))})
}

// TestTheHookAddsTheClaim: a request as Supabase Auth sends it (metadata, two signatures in
// one header, the second by tollgate's secret) is answered 200 application/json with
// every supabaseInput claim's bytes unchanged, in their order, plus tollgate.
func TestTheHookAddsTheClaim(t *testing.T) {
	t.Parallel()
	h := newHook(claimsFor{claim: json.RawMessage(claim)}, &logcapture.Buffer{}, secret)
	rec := serve(h, signedRequest(t, supabaseInput, time.Now(), otherSecret, secret))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	var in struct{ Claims json.RawMessage }
	json.Unmarshal([]byte(supabaseInput), &in)
	want := `{"claims":` + strings.TrimSuffix(string(in.Claims), "}") + `,"tollgate":` + claim + `}}`
	if rec.Body.String() != want {
		t.Fatalf("answer\n%s\nwant\n%s", rec.Body, want)
	}
	var out struct{ Claims map[string]json.RawMessage }
	var given struct{ Claims map[string]json.RawMessage }
	if json.Unmarshal(rec.Body.Bytes(), &out) != nil || json.Unmarshal([]byte(supabaseInput), &given) != nil {
		t.Fatal("not JSON")
	}
	for name, value := range given.Claims {
		if !bytes.Equal(out.Claims[name], value) {
			t.Errorf("claim %s: %s, want %s byte for byte", name, out.Claims[name], value)
		}
	}
	if len(out.Claims) != len(given.Claims)+1 || out.Claims["tollgate"] == nil {
		t.Fatalf("claims %v", out.Claims)
	}
}

// TestTheHookRefuses: a wrong secret, missing headers, a timestamp 10 minutes old or a
// changed body is 401; a body that is not the hook's shape is 400; a body past the limit
// is 413 — each with the webhook routes' problem types.
func TestTheHookRefuses(t *testing.T) {
	t.Parallel()
	h := newHook(claimsFor{claim: json.RawMessage(claim)}, &logcapture.Buffer{}, secret)
	stripped := func(name string) *http.Request {
		r := signedRequest(t, supabaseInput, time.Now(), secret)
		r.Header.Del(name)
		return r
	}
	tampered := signedRequest(t, supabaseInput, time.Now(), secret)
	tampered.Body = http.NoBody
	for _, c := range []struct {
		name   string
		req    *http.Request
		status int
		kind   string
	}{
		{"wrong secret", signedRequest(t, supabaseInput, time.Now(), otherSecret), 401, "invalid-signature"},
		{"no signature", stripped("webhook-signature"), 401, "invalid-signature"},
		{"no id", stripped("webhook-id"), 401, "invalid-signature"},
		{"no timestamp", stripped("webhook-timestamp"), 401, "invalid-signature"},
		{"10 minutes old", signedRequest(t, supabaseInput, time.Now().Add(-10*time.Minute), secret), 401, "invalid-signature"},
		{"another body", tampered, 401, "invalid-signature"},
		{"no user", signedRequest(t, `{"claims":{},"authentication_method":"password"}`, time.Now(), secret), 400, "invalid-body"},
		{"claims not an object", signedRequest(t, `{"user_id":"u","claims":[1],"authentication_method":"password"}`, time.Now(), secret), 400, "invalid-body"},
		{"no method", signedRequest(t, `{"user_id":"u","claims":{}}`, time.Now(), secret), 400, "invalid-body"},
		{"not JSON", signedRequest(t, `claims`, time.Now(), secret), 400, "invalid-body"},
		{"too large", signedRequest(t, `{"user_id":"`+strings.Repeat("u", 2<<20)+`"}`, time.Now(), secret), 413, "body-too-large"},
	} {
		rec := serve(h, c.req)
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), "/problems/"+c.kind) {
			t.Errorf("%s: %d %s, want %d %s", c.name, rec.Code, rec.Body, c.status, c.kind)
		}
	}
	if rec := serve(newHook(claimsFor{}, &logcapture.Buffer{}), signedRequest(t, supabaseInput, time.Now(), secret)); rec.Code != http.StatusNotFound {
		t.Fatalf("without a secret the route answers %d, want 404 (not mounted)", rec.Code)
	}
}

// TestTheHookNeverFailsASignIn: when the answer cannot be read within ReadWithin (a slow or
// failing database), the claims go back unchanged with 200, a warning is logged once for
// the outage, and each fallback is counted.
func TestTheHookNeverFailsASignIn(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]claimsFor{
		"slow":    {claim: json.RawMessage(claim), delay: time.Minute},
		"failing": {err: errors.New("database down")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			logs := &logcapture.Buffer{}
			h := newHook(c, logs, secret)
			var in struct{ Claims json.RawMessage }
			json.Unmarshal([]byte(supabaseInput), &in)
			for range 2 {
				start := time.Now()
				rec := serve(h, signedRequest(t, supabaseInput, time.Now(), secret))
				if took := time.Since(start); rec.Code != http.StatusOK || took > 2*time.Second {
					t.Fatalf("%d after %v", rec.Code, took)
				}
				if want := `{"claims":` + string(in.Claims) + `}`; rec.Body.String() != want {
					t.Fatalf("answer %s, want the claims unchanged", rec.Body)
				}
			}
			if n := strings.Count(logs.String(), "without the tollgate claim"); n != 1 {
				t.Fatalf("%d warnings for one outage, want 1: %s", n, logs)
			}
		})
	}
}
