package app

import (
	"net/http"
	"strings"
	"testing"
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
	_, logs := stop()
	for _, want := range []string{
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
