package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate/tollgate"
	"github.com/tollgate/tollgate/tollgatetest"
)

// TestProjectsApp tests the example as an app of yours would, with the public test kit
// only: its endpoints answer by the user's plan, its operations are in the OpenAPI document
// it serves, and its billing hook logs the user whose billing changed.
func TestProjectsApp(t *testing.T) {
	idp, err := tollgatetest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	defer idp.Close()
	free, _ := idp.Token("free@example.test")
	pro, _ := idp.Token("pro@example.test")
	var logs syncBuffer
	// In development, New syncs the plans file into the database, as serve does.
	settings := tollgatetest.NewEnv(idp, map[string]string{"APP_ENV": "development", "PLANS_FILE": "../../config/plans.yml"})
	app, err := tollgate.New(context.Background(), settings.Get, &logs)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	register(app, slog.New(slog.NewTextHandler(&logs, nil)))
	srv := httptest.NewServer(app.Handler())
	defer srv.Close()
	base := srv.URL

	// The pro user buys on the mobile store: a webhook, and the hook logs them.
	started, err := os.ReadFile("../../internal/billing/testdata/mobile/subscription_started.json")
	if err != nil {
		t.Fatal(err)
	}
	var event map[string]any
	json.Unmarshal(started, &event)
	event["customer_user_id"] = pro
	event["event_datetime"] = time.Now().Add(-time.Minute).UTC().Format("2006-01-02T15:04:05.000000-0700")
	event["event_properties"].(map[string]any)["subscription_expires_at"] = time.Now().Add(30 * 24 * time.Hour).UTC().Format("2006-01-02T15:04:05.000000-0700")
	body, _ := json.Marshal(event)
	req, _ := http.NewRequest(http.MethodPost, base+"/billing/webhooks/mobile", strings.NewReader(string(body)))
	req.Header.Set("Authorization", tollgatetest.MobileWebhookSecret)
	if status, _ := do(t, req); status != http.StatusOK {
		t.Fatalf("mobile webhook: %d", status)
	}
	if !strings.Contains(logs.String(), `msg="billing changed" user_id=`+pro) {
		t.Fatalf("the billing hook did not log the user:\n%s", logs.String())
	}

	token := func(email string) string {
		_, token := idp.Token(email)
		return "Bearer " + token
	}
	call := func(method, path, authorization string) (int, string) {
		req, _ := http.NewRequest(method, base+path, nil)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		return do(t, req)
	}
	if status, body := call(http.MethodGet, "/api/v1/projects", token("free@example.test")); status != http.StatusOK || !strings.Contains(body, `"owner":"`+free+`"`) {
		t.Fatalf("projects for a signed-in user: %d %s", status, body)
	}
	if status, _ := call(http.MethodGet, "/api/v1/projects", ""); status != http.StatusUnauthorized {
		t.Fatalf("projects without a token: %d", status)
	}
	if status, body := call(http.MethodPost, "/api/v1/exports", token("free@example.test")); status != http.StatusForbidden || !strings.Contains(body, "application/problem+json") && !strings.Contains(body, `"status":403`) {
		t.Fatalf("export on the free plan: %d %s", status, body)
	}
	if status, body := call(http.MethodPost, "/api/v1/exports", token("pro@example.test")); status != http.StatusOK || !strings.Contains(body, `"status":"started"`) {
		t.Fatalf("export on the pro plan: %d %s", status, body)
	}
	if status, spec := call(http.MethodGet, "/api-docs/swagger.yaml", ""); status != http.StatusOK ||
		!strings.Contains(spec, "/api/v1/projects:") || !strings.Contains(spec, "/api/v1/exports:") || !strings.Contains(spec, "/api/v1/me:") {
		t.Fatalf("the OpenAPI document lacks the app's operations: %d", status)
	}
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// syncBuffer keeps what the app logs, written from its goroutines, for the test to read.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
