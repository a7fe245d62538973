package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/paddle/paddledev"
)

// A Paddle subscriber made by "webhook send --user --now" is pro; when the cancellation's
// notification is lost, "reconcile --provider paddle" reads Paddle's subscriptions page
// by page from the API (a stand-in here) and repairs it, and the start-up line names
// Paddle.
func TestReconcilePaddleRepairsALostCancellation(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(nil)
	defer srv.Close()
	standIn := paddledev.New(srv.URL)
	standIn.MaxPerPage = 2
	srv.Config.Handler = standIn.Handler()
	env := testEnv(t, map[string]string{"PADDLE_WEBHOOK_SECRET": "pdl_ntfset_old,pdl_ntfset_new", "PADDLE_API_KEY": "pdl_sdbx_apikey_test",
		"PADDLE_API_BASE": srv.URL})
	migrateAndSyncPlans(t, env)
	_, logs := startServeLogs(t, env)
	if !strings.Contains(logs(), `providers=web,mobile,paddle `) {
		t.Errorf("the start-up line does not name paddle:\n%s", logs())
	}
	user := "0e7a1c52-1f0b-4c1e-9a55-7add1e000001"
	code, out, errOut := runCmd(ctx, env, "webhook", "send", "--provider", "paddle", "--user", user, "--now",
		"--file", "../billing/testdata/paddle/subscription.created.json")
	if code != 0 || !strings.Contains(out, "user "+user+": plan pro, active until ") {
		t.Fatalf("webhook send --provider paddle: exit %d\n%s%s", code, out, errOut)
	}

	if code, _, _ := runCmd(ctx, env, "entitlements", "check", user, "exports"); code != 0 {
		t.Fatalf("a pro subscriber may not export: exit %d", code)
	}

	// What Paddle holds: the subscription canceled a minute ago, and four of other customers.
	fixture, err := os.ReadFile("../billing/testdata/paddle/subscription.created.json")
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ Data map[string]any }
	if err := json.Unmarshal(fixture, &created); err != nil {
		t.Fatal(err)
	}
	put := func(id, customer, status string, edit func(sub map[string]any)) {
		sub := map[string]any{}
		for k, v := range created.Data {
			sub[k] = v
		}
		sub["id"], sub["customer_id"], sub["status"] = id, customer, status
		delete(sub, "transaction_id")
		if edit != nil {
			edit(sub)
		}
		raw, _ := json.Marshal(sub)
		if err := standIn.Put(raw); err != nil {
			t.Fatal(err)
		}
	}
	canceled := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	put(billing.ForUserID("sub_01TESTa1b2c3d4e5f6g7h8i9j0", user), billing.ForUserID("ctm_01TESTcustomer00000000001", user), "canceled",
		func(sub map[string]any) {
			sub["canceled_at"], sub["current_billing_period"], sub["custom_data"] = canceled, nil, map[string]any{"user_id": user}
		})
	for i := range 4 {
		put(fmt.Sprintf("sub_01TESTother%014d", i), fmt.Sprintf("ctm_01TESTother%014d", i), "active", func(sub map[string]any) { sub["custom_data"] = nil })
	}
	code, out, errOut = runCmd(ctx, env, "reconcile", "--provider", "paddle")
	if code != 0 || !regexp.MustCompile(`reconcile paddle: 5 checked, 1 drifted \(repaired 1\), 4 unresolved, 0 failed`).MatchString(out) {
		t.Fatalf("reconcile --provider paddle: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCmd(ctx, env, "reconcile", "--provider", "paddle")
	if code != 0 || !strings.Contains(out, "reconcile paddle: 5 checked, 0 drifted") {
		t.Fatalf("a second pass: exit %d\n%s%s", code, out, errOut)
	}
	if reads := standIn.Reads(); reads < 6 {
		t.Errorf("five subscriptions, two a page, read twice in %d pages", reads)
	}
	if code, _, _ := runCmd(ctx, env, "entitlements", "check", user, "exports"); code != 1 {
		t.Errorf("after the repair the user may still export (pro's): exit %d", code)
	}
	if code, out, _ := runCmd(ctx, env, "users", "show", user); code != 0 || !strings.Contains(out, "paddle") || !strings.Contains(out, "expired") {
		t.Errorf("users show after the repair: exit %d\n%s", code, out)
	}
}
