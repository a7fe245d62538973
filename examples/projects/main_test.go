package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/identity"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
	"github.com/tollgate/tollgate/internal/logcapture"
)

// TestProjectsApp boots the example against the identity fake: its endpoints answer by
// the user's plan, its operations are in the OpenAPI document it serves, and its billing
// hook logs the user whose billing changed.
func TestProjectsApp(t *testing.T) {
	fake := identitytest.New(t)
	free, pro := fake.AddUser("free@example.test", "password1"), fake.AddUser("pro@example.test", "password1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := map[string]string{
		"APP_ENV": "development", "ADDR": addr, "PUBLIC_URL": "http://" + addr, "AUTH_URL": fake.URL,
		"DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "projects.db"), "PLANS_FILE": "../../config/plans.yml",
		"WEB_WEBHOOK_SECRET": "whsec_example", "MOBILE_WEBHOOK_SECRET": "mobile-example",
	}
	var logs logcapture.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return env[k] }, &logs) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the app stopped with %v", err)
		}
	})
	base := env["PUBLIC_URL"]
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the app did not come up: %s", logs.String())
		}
	}

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
	req.Header.Set("Authorization", env["MOBILE_WEBHOOK_SECRET"])
	if status, _ := do(t, req); status != http.StatusOK {
		t.Fatalf("mobile webhook: %d", status)
	}
	if !strings.Contains(logs.String(), `msg="billing changed" user_id=`+pro) {
		t.Fatalf("the billing hook did not log the user:\n%s", logs.String())
	}

	token := func(email string) string {
		s, err := identity.New(fake.URL, "", nil).SignInWithPassword(context.Background(), email, "password1")
		if err != nil {
			t.Fatal(err)
		}
		return "Bearer " + s.AccessToken
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
