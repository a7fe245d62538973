package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/stores"
)

// The App Store's route exists only with APPSTORE_BUNDLE_ID, verifies against the roots
// APPSTORE_ROOT_CERTS names, and a root file (or Google Play's key file) that cannot be
// read stops the server.
func TestAppStoreIsConfigured(t *testing.T) {
	chain, err := appstoredev.New(appstoredev.Options{})
	if err != nil {
		t.Fatal(err)
	}
	roots := filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(roots, chain.RootPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	server := func(vars map[string]string) (*httptest.Server, error) {
		vars["MOBILE_WEBHOOK_SECRET"], vars["WEB_WEBHOOK_SECRET"] = mobileSecret, "w"
		cfg, err := config.Load(func(k string) string { return vars[k] })
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewServer(context.Background(), env{stores: stores.All(), cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil))}, dbtest.SQLite(t))
		if err != nil {
			return nil, err
		}
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(srv.Close)
		return srv, nil
	}
	post := func(srv *httptest.Server, body string) int {
		resp, err := http.Post(srv.URL+"/billing/webhooks/appstore", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	off, err := server(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if code := post(off, `{}`); code != http.StatusNotFound {
		t.Fatalf("without APPSTORE_BUNDLE_ID: %d, want 404", code)
	}
	on, err := server(map[string]string{"APPSTORE_BUNDLE_ID": "com.example.app", "APPSTORE_ROOT_CERTS": roots})
	if err != nil {
		t.Fatal(err)
	}
	body, err := chain.Body(appstoredev.Notification{UUID: "as-1", Type: "TEST", BundleID: "com.example.app", Signed: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if code := post(on, string(body)); code != http.StatusOK {
		t.Fatalf("a test notification signed under APPSTORE_ROOT_CERTS: %d", code)
	}
	if code := post(on, `{"signedPayload":"x.y.z"}`); code != http.StatusUnauthorized {
		t.Fatalf("a forgery: %d, want 401", code)
	}
	if _, err := server(map[string]string{"APPSTORE_BUNDLE_ID": "com.example.app", "APPSTORE_ROOT_CERTS": roots + ".missing"}); err == nil || !strings.Contains(err.Error(), "APPSTORE_ROOT_CERTS") {
		t.Fatalf("an unreadable root file: %v, want an error naming APPSTORE_ROOT_CERTS", err)
	}
	// An empty root file stops the start, rather than leave Apple's real root in its place.
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := server(map[string]string{"APPSTORE_BUNDLE_ID": "com.example.app", "APPSTORE_ROOT_CERTS": empty}); err == nil || !strings.Contains(err.Error(), "APPSTORE_ROOT_CERTS") || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("an empty root file: %v, want an error naming APPSTORE_ROOT_CERTS", err)
	}
	// The root as DER, as Apple ships it: Apple's own test root verifies Apple's own signed
	// test notification (from Apple's server library).
	der, err := server(map[string]string{"APPSTORE_BUNDLE_ID": "com.example", "APPSTORE_ROOT_CERTS": "../billing/appstore/testdata/apple/testCA.der", "APPSTORE_ENVIRONMENTS": "Sandbox"})
	if err != nil {
		t.Fatalf("a DER root file: %v", err)
	}
	apple, err := os.ReadFile("../billing/appstore/testdata/apple/testNotification")
	if err != nil {
		t.Fatal(err)
	}
	if code := post(der, `{"signedPayload":"`+strings.TrimSpace(string(apple))+`"}`); code != http.StatusOK {
		t.Fatalf("Apple's test notification under its DER test root: %d", code)
	}
	play := map[string]string{"PLAY_PACKAGE_NAME": "com.example.app", "PLAY_PUSH_AUDIENCE": "a", "PLAY_PUSH_SERVICE_ACCOUNT": "s",
		"PLAY_SERVICE_ACCOUNT_JSON": roots + ".missing"}
	if _, err := server(play); err == nil || !strings.Contains(err.Error(), "PLAY_SERVICE_ACCOUNT_JSON") {
		t.Fatalf("an unreadable Play key file: %v, want an error naming PLAY_SERVICE_ACCOUNT_JSON", err)
	}
}
