package app

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
)

// "webhook send" says what became of the event; with --now the README's worked example
// ends with an entitled user whatever the date.
func TestWebhookSendSaysWhatHappened(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t, nil)
	migrateAndSyncPlans(t, env)
	startServe(t, env)
	const (
		webFile    = "../billing/testdata/web/customer.subscription.updated.json"
		mobileFile = "../billing/testdata/mobile/subscription_started.json"
		user       = "5a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d"
	)
	send := func(args ...string) (int, string, string) {
		return runCmd(ctx, env, append([]string{"webhook", "send"}, args...)...)
	}
	steps := []struct {
		args []string
		want string // a regexp over stdout
	}{
		{[]string{"--provider", "web", "--file", webFile, "--now"}, `outcome: applied\nuser ` + user + `: plan pro, active until \S+\n$`},
		{[]string{"--provider", "web", "--file", webFile}, `outcome: older than the stored state`},
		{[]string{"--provider", "mobile", "--file", mobileFile, "--now"}, `outcome: applied\nuser ` + user + `: plan pro, active`},
		{[]string{"--provider", "mobile", "--file", mobileFile}, `outcome: older than the stored state`}, // October's own event
	}
	for _, step := range steps {
		code, out, errOut := send(step.args...)
		if code != 0 || !regexp.MustCompile(step.want).MatchString(out) {
			t.Fatalf("webhook send %v: exit %d\n%s%s\nwant %s", step.args, code, out, errOut, step.want)
		}
	}
	if code, out, _ := runCmd(ctx, env, "entitlements", "check", user, "exports"); code != 0 {
		t.Fatalf("after --now the user is not entitled: %s", out)
	}

	code, _, errOut := send("--provider", "mobile", "--file", webFile)
	if code == 0 || !strings.Contains(errOut, "holds a web event (Stripe-shaped), not a mobile one: send it with --provider web") {
		t.Fatalf("a web file sent as mobile: exit %d %q", code, errOut)
	}
	code, _, errOut = send("--provider", "web", "--file", mobileFile)
	if code == 0 || !strings.Contains(errOut, "--provider mobile") {
		t.Fatalf("a mobile file sent as web: exit %d %q", code, errOut)
	}
}

// TestWebhookSendForAUserOnTheDevelopmentPort: in development with only PORT set, webhook
// send reaches the server on that port; --user sends the event for another user; an ended
// subscription is reported as ended, never "expired until".
func TestWebhookSendForAUserOnTheDevelopmentPort(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t, map[string]string{"APP_ENV": "development"})
	env["PORT"] = env["ADDR"][strings.LastIndex(env["ADDR"], ":")+1:]
	delete(env, "ADDR")
	delete(env, "PUBLIC_URL")
	migrateAndSyncPlans(t, env)
	startServe(t, map[string]string{"ADDR": "127.0.0.1:" + env["PORT"], "APP_ENV": "development", "DATABASE_URL": env["DATABASE_URL"],
		"WEB_WEBHOOK_SECRET": webSecret, "MOBILE_WEBHOOK_SECRET": mobileSecret, "PLANS_FILE": env["PLANS_FILE"]})
	const someone = "0b4f2f0e-6d43-4c55-9a41-3c1d2e7f8a90"
	code, out, errOut := runCmd(ctx, env, "webhook", "send", "--provider", "web", "--now", "--user", someone,
		"--file", "../billing/testdata/web/customer.subscription.updated.json")
	if code != 0 || !strings.Contains(out, "user "+someone+": plan pro, active until ") {
		t.Fatalf("webhook send --user on PORT %s: exit %d\n%s%s", env["PORT"], code, out, errOut)
	}
	code, out, _ = runCmd(ctx, env, "webhook", "send", "--provider", "mobile", "--now", "--user", someone,
		"--file", "../billing/testdata/mobile/subscription_started.json")
	if code != 0 || !strings.Contains(out, "user "+someone+": plan pro, active until ") {
		t.Fatalf("mobile webhook send --user: exit %d\n%s", code, out)
	}

	ended := editFixture(t, "../billing/testdata/web/customer.subscription.updated.json", func(m map[string]any) {
		now := time.Now().Unix()
		m["id"], m["created"] = "evt_ended_for_send", now
		obj := m["data"].(map[string]any)["object"].(map[string]any)
		obj["status"], obj["ended_at"], obj["canceled_at"] = "canceled", now-60, now-60
		obj["customer"] = "cus_ended_for_send"
		obj["id"] = "sub_ended_for_send"
		obj["metadata"] = map[string]any{"user_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7"}
	})
	file := filepath.Join(t.TempDir(), "ended.json")
	if err := os.WriteFile(file, ended, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCmd(ctx, env, "webhook", "send", "--provider", "web", "--file", file)
	if code != 0 || strings.Contains(out, "expired until") || !strings.Contains(out, "expired period ended ") {
		t.Fatalf("an ended subscription: exit %d\n%s%s", code, out, errOut)
	}
}

// An App Store notification written decoded is signed with the local test chain the server
// pins, and applied.
func TestWebhookSendAppStore(t *testing.T) {
	ctx := context.Background()
	chainPath := filepath.Join(t.TempDir(), "chain.pem")
	chain, err := appstoredev.New(appstoredev.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.Save(chainPath); err != nil {
		t.Fatal(err)
	}
	fake := identitytest.New(t)
	env := testEnv(t, map[string]string{
		"APPSTORE_BUNDLE_ID": "com.example.app", "APPSTORE_ROOT_CERTS": appstoredev.RootPath(chainPath), "APPSTORE_TEST_CHAIN": chainPath,
		"AUTH_URL": fake.URL, "ADMIN_EMAILS": "ops@example.test",
	})
	migrateAndSyncPlans(t, env)
	startServe(t, env)
	const file = "../billing/testdata/appstore/subscribed.json"
	code, out, errOut := runCmd(ctx, env, "webhook", "send", "--provider", "appstore", "--file", file, "--now")
	if want := `outcome: applied\nuser 5a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d: plan pro, active until \S+\n$`; code != 0 || !regexp.MustCompile(want).MatchString(out) ||
		!strings.Contains(errOut, "APPSTORE_ROOT_CERTS="+appstoredev.RootPath(chainPath)) {
		t.Fatalf("webhook send --provider appstore: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCmd(ctx, env, "webhook", "send", "--provider", "web", "--file", file); code == 0 || !strings.Contains(errOut, "--provider appstore") {
		t.Fatalf("an App Store file sent as web: exit %d %q", code, errOut)
	}

	// Without --now the fixture's period (October 2026) has ended with no renewal: the store
	// said active, but nobody is shown a green "active" for a plan the user no longer has.
	const late = "0c0ffee0-3b1e-4f7a-9d2c-8e6f0a1b2c3d"
	code, out, errOut = runCmd(ctx, env, "webhook", "send", "--provider", "appstore", "--file", file, "--user", late)
	if want := `user ` + late + `: plan free, lapsed period ended 2026-\S+\n$`; code != 0 || !regexp.MustCompile(want).MatchString(out) {
		t.Fatalf("an old App Store fixture: exit %d\n%s%s\nwant %s", code, out, errOut, want)
	}
	code, out, errOut = runCmd(ctx, env, "users", "show", late)
	if code != 0 || !strings.Contains(out, "appstore") || !strings.Contains(out, " lapsed period ended 2026-") ||
		!strings.Contains(out, "status lapsed") || strings.Contains(out, "active") {
		t.Fatalf("users show of an old App Store subscription: exit %d\n%s%s", code, out, errOut)
	}
	operator := signedInClient(t, env["PUBLIC_URL"], fake, "ops@example.test")
	_, page := fetch(t, operator, "GET", env["PUBLIC_URL"]+"/admin/customers/"+late, nil)
	rows := page[strings.Index(page, `id="subscriptions"`):]
	if !strings.Contains(page, `<dd id="status"><span class="pill lapsed">lapsed</span>`) ||
		!strings.Contains(rows, `<td data-label="Status"><span class="pill lapsed">lapsed</span>`) || strings.Contains(page, `pill active`) {
		t.Errorf("the console calls an old App Store subscription active:\n%s", page)
	}
}

// TestEveryOutcomeIsExplained: webhook send has words for every outcome billing names.
func TestEveryOutcomeIsExplained(t *testing.T) {
	for _, outcome := range billing.Outcomes {
		if outcomeMeaning[outcome] == "" {
			t.Errorf("webhook send does not explain the outcome %q", outcome)
		}
	}
}
