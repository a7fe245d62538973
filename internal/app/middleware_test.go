package app

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tollgate/tollgate/internal/identity/identitytest"
)

// The access log names each form page by the route it matched, with its path but never a
// query string or a token in the path.
func TestAccessLogNamesFormRoutes(t *testing.T) {
	env := testEnv(t, nil)
	stop := startServe(t, env)
	base := "http://" + env["ADDR"]
	for _, path := range []string{"/session/new?email=secret-query%40example.test", "/passwords/tok-secret-123/edit", "/otp/new", "/nowhere"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// The per-address throttle refuses the 11th sign-in for one address before the forms'
	// mux runs: its line still names the route and the path.
	throttled := 0
	for range 11 {
		resp, err := http.PostForm(base+"/session", url.Values{"email": {"throttled@example.test"}, "password": {"guess"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			throttled++
		}
	}
	_, logs := stop()
	if throttled != 1 {
		t.Errorf("%d sign-ins of 11 throttled, want 1", throttled)
	}
	for _, want := range []string{
		`path=/session route="POST /session" status=429`,
		`route="GET /session/new" status=`, `path=/session/new route=`,
		`path=/passwords/{token}/edit route="GET /passwords/{token}/edit"`,
		`path=/otp/new route="GET /otp/new"`,
		`path=/nowhere route=/ status=404`,
		`route="GET /healthz"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the access log lacks %q:\n%s", want, logs)
		}
	}
	for _, secret := range []string{"secret-query", "tok-secret-123", "web (forms)"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the access log holds %q", secret)
		}
	}
}

// TestAPIRequestsAreCountedByOperation: metrics and the access log name each /api/*
// request by the operation's pattern, refused ones included, never by the raw path (a user
// id) nor all as "/api/".
func TestAPIRequestsAreCountedByOperation(t *testing.T) {
	fake := identitytest.New(t)
	env := testEnv(t, map[string]string{"AUTH_URL": fake.URL})
	stop := startServe(t, env)
	base := "http://" + env["ADDR"]
	const user = "5a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d"
	for _, path := range []string{"/api/v1/me", "/api/v1/users/" + user + "/entitlements", "/api/v1/nothing"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, logs := stop()
	for _, want := range []string{
		`tollgate_http_requests_total{route="GET /api/v1/me",status="401"} 1`,
		`tollgate_http_requests_total{route="GET /api/v1/users/{user_id}/entitlements",status="401"} 1`,
		`tollgate_http_requests_total{route="/api/",status="401"} 1`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if !strings.Contains(logs, `route="GET /api/v1/me" status=401`) || strings.Contains(logs, user+"/entitlements") {
		t.Errorf("the access log does not name the API operation, or names the raw path:\n%s", logs)
	}
}
