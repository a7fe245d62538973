package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/identity"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
)

// TestAWebhookToOneInstanceChangesMeOnTheOther: two serve instances on one Postgres, both
// keeping billing answers in memory. The one that did not receive the webhook answers
// /api/v1/me anew within a second of it, told by the database's notification.
func TestAWebhookToOneInstanceChangesMeOnTheOther(t *testing.T) {
	fake := identitytest.New(t)
	dbURL := dbtest.PostgresURL(t)
	one := testEnv(t, map[string]string{"AUTH_URL": fake.URL, "DATABASE_URL": dbURL})
	other := testEnv(t, map[string]string{"AUTH_URL": fake.URL, "DATABASE_URL": dbURL})
	migrateAndSyncPlans(t, one)
	startServe(t, one)
	startServe(t, other)
	user := fake.AddUser("both@example.test", "password1")
	session, err := identity.New(fake.URL, "", nil).SignInWithPassword(context.Background(), "both@example.test", "password1")
	if err != nil {
		t.Fatal(err)
	}
	subscribed := func() bool {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, other["PUBLIC_URL"]+"/api/v1/me", nil)
		req.Header.Set("Authorization", "Bearer "+session.AccessToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var me struct{ Billing struct{ Subscribed bool } }
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&me) != nil {
			t.Fatalf("/api/v1/me: %d", resp.StatusCode)
		}
		return me.Billing.Subscribed
	}
	if subscribed() { // and now the other instance keeps the answer
		t.Fatal("subscribed before any event")
	}

	web := editFixture(t, "../billing/testdata/web/customer.subscription.updated.json", func(m map[string]any) {
		m["created"] = time.Now().Add(-time.Minute).Unix()
		obj := m["data"].(map[string]any)["object"].(map[string]any)
		obj["metadata"] = map[string]any{"user_id": user}
		obj["items"].(map[string]any)["data"].([]any)[0].(map[string]any)["current_period_end"] = time.Now().Add(30 * 24 * time.Hour).Unix()
	})
	if status, err := postWeb(http.DefaultClient, one["PUBLIC_URL"], web); err != nil || status != http.StatusOK {
		t.Fatalf("web event: %d %v", status, err)
	}
	sent := time.Now()
	for !subscribed() {
		if time.Since(sent) > time.Second {
			t.Fatal("/api/v1/me on the other instance did not change within a second")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the other instance answered anew after %v", time.Since(sent))
}

// TestAnotherProcessWritesReachServeOnSQLite: on SQLite, with serve keeping answers in
// memory for 30 s, commands run as other processes on the same file change /api/v1/me on
// the running server within a second: a plans sync that maps an unresolved event's price
// followed by a replay that completes it, then a plans sync that changes the plan's
// entitlements.
func TestAnotherProcessWritesReachServeOnSQLite(t *testing.T) {
	fake := identitytest.New(t)
	plans := filepath.Join(t.TempDir(), "plans.yml")
	writePlans := func(proPrices string, proProjects int) {
		t.Helper()
		doc := fmt.Sprintf("plans:\n  free:\n    default: true\n    entitlements: [{name: projects, value: 1}]\n"+
			"  pro:\n    entitlements: [{name: projects, value: %d}]\n    web_prices: [%s]\n", proProjects, proPrices)
		if err := os.WriteFile(plans, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writePlans("price_other", 10)
	env := testEnv(t, map[string]string{"AUTH_URL": fake.URL, "PLANS_FILE": plans, "BILLING_ANSWER_MAX_AGE": "30s"})
	bin := buildBinary(t)
	command := func(args ...string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("tollgate %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	command("migrate")
	command("plans", "sync")
	startServe(t, env)
	user := fake.AddUser("other-process@example.test", "password1")
	session, err := identity.New(fake.URL, "", nil).SignInWithPassword(context.Background(), "other-process@example.test", "password1")
	if err != nil {
		t.Fatal(err)
	}
	type billingAnswer struct {
		Plan         *struct{ Key string }
		Entitlements map[string]any
	}
	me := func() billingAnswer {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, env["PUBLIC_URL"]+"/api/v1/me", nil)
		req.Header.Set("Authorization", "Bearer "+session.AccessToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Billing billingAnswer }
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil {
			t.Fatalf("/api/v1/me: %d", resp.StatusCode)
		}
		return body.Billing
	}
	within := func(what string, cond func(billingAnswer) bool) {
		t.Helper()
		since := time.Now()
		for a := me(); !cond(a); a = me() {
			if time.Since(since) > time.Second {
				t.Fatalf("%s: /api/v1/me still answers %+v a second later", what, a)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("%s: the running server answered anew after %v", what, time.Since(since))
	}

	web := editFixture(t, "../billing/testdata/web/customer.subscription.updated.json", func(m map[string]any) {
		m["created"] = time.Now().Add(-time.Minute).Unix()
		obj := m["data"].(map[string]any)["object"].(map[string]any)
		obj["metadata"] = map[string]any{"user_id": user}
		obj["items"].(map[string]any)["data"].([]any)[0].(map[string]any)["current_period_end"] = time.Now().Add(30 * 24 * time.Hour).Unix()
	})
	if status, err := postWeb(http.DefaultClient, env["PUBLIC_URL"], web); err != nil || status != http.StatusOK {
		t.Fatalf("web event: %d %v", status, err)
	}
	if a := me(); a.Plan == nil || a.Plan.Key != "free" { // unresolved: no plan lists its price; now kept
		t.Fatalf("before the price is mapped: %+v, want plan free", a)
	}

	writePlans("price_1TESTmonthlyPro000001", 10)
	command("plans", "sync")
	command("events", "replay", "--unprocessed")
	within("plans sync and replay", func(a billingAnswer) bool { return a.Plan != nil && a.Plan.Key == "pro" })

	writePlans("price_1TESTmonthlyPro000001", 25)
	command("plans", "sync")
	within("plans sync changing entitlements", func(a billingAnswer) bool { return a.Entitlements["projects"] == float64(25) })
}
