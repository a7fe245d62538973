package app

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// tollgate reconcile, by hand: a dry run reports the subscription whose webhooks never came
// and repairs nothing; the pass repairs it; a second finds nothing; status shows the passes
// with the drift, before → after.
func TestReconcileCommands(t *testing.T) {
	now := time.Now()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/subscriptions" || r.URL.Query().Get("status") != "all" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"object":"list","has_more":false,"data":[{"id":"sub_never_heard","object":"subscription","customer":"cus_never_heard",
			"status":"active","created":%d,"metadata":{"user_id":"%s"},
			"items":{"object":"list","data":[{"price":{"id":"price_1TESTmonthlyPro000001"},"current_period_end":%d}]}}]}`,
			now.Unix(), userUUID(61), now.AddDate(0, 1, 0).Unix())
	}))
	defer api.Close()
	env := testEnv(t, map[string]string{"WEB_API_KEY": "sk_test_reconcile", "WEB_API_BASE": api.URL})
	migrateAndSyncPlans(t, env)
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"reconcile", "--dry-run"}, "reconcile web: 1 checked, 1 drifted (would repair 1), 0 unresolved, 0 failed\n"},
		{[]string{"reconcile"}, "reconcile web: 1 checked, 1 drifted (repaired 1), 0 unresolved, 0 failed\n"},
		{[]string{"reconcile"}, "reconcile web: 1 checked, 0 drifted (repaired 0), 0 unresolved, 0 failed\n"},
	} {
		code, out, errOut := runCmd(context.Background(), env, step.args...)
		if code != 0 || out != step.want {
			t.Fatalf("%v: exit %d\n%s%s\nwant %s", step.args, code, out, errOut, step.want)
		}
	}
	code, out, _ := runCmd(context.Background(), env, "reconcile", "status")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 5 || !strings.Contains(lines[0], "1 checked, 0 drifted, 0 repaired") ||
		!strings.Contains(lines[1], "1 checked, 1 drifted, 1 repaired") || !strings.HasPrefix(lines[2], "  sub_never_heard: none → pro active until ") ||
		!strings.Contains(lines[3], "(dry run)") {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
}

// A pass cut short (SIGINT or SIGTERM end the command's context) exits non-zero, says so,
// and is shown as interrupted, not finished.
func TestReconcileInterruptedExitsNonZero(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cancel() // the signal arrives while the page is read
		fmt.Fprint(w, `{"object":"list","has_more":true,"data":[]}`)
	}))
	defer api.Close()
	env := testEnv(t, map[string]string{"WEB_API_KEY": "sk_test_reconcile", "WEB_API_BASE": api.URL})
	if code, _, errOut := runCmd(ctx, env, "migrate"); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	code, _, errOut := runCmd(ctx, env, "reconcile")
	if code == 0 || !strings.Contains(errOut, "interrupted") {
		t.Fatalf("an interrupted pass: exit %d, %q", code, errOut)
	}
	code, out, _ := runCmd(context.Background(), env, "reconcile", "status")
	if code != 0 || !strings.Contains(out, ", interrupted ") || strings.Contains(out, "running") {
		t.Fatalf("status after the interruption: exit %d\n%s", code, out)
	}
}

// serve reconciles right after start-up on a fresh database, whatever RECONCILE_INTERVAL
// says; stopped mid-pass, it winds the pass down, records it as interrupted and releases
// the lease, so a pass by hand can start at once.
func TestServeReconcilesAtStartAndWindsDownOnStop(t *testing.T) {
	var calls atomic.Int32
	inPage := make(chan struct{})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			close(inPage)
			<-r.Context().Done() // serve stops while this page is read
			return
		}
		fmt.Fprint(w, `{"object":"list","has_more":false,"data":[]}`)
	}))
	defer api.Close()
	env := testEnv(t, map[string]string{"WEB_API_KEY": "sk_test_reconcile", "WEB_API_BASE": api.URL, "RECONCILE_INTERVAL": "1h"})
	stop := startServe(t, env)
	select {
	case <-inPage:
	case <-time.After(10 * time.Second):
		t.Fatal("no reconcile pass within 10 s of start-up with RECONCILE_INTERVAL=1h on a fresh database")
	}
	if code, logs := stop(); code != 0 {
		t.Fatalf("serve exited %d: %s", code, logs)
	}
	code, out, _ := runCmd(context.Background(), env, "reconcile", "status")
	if code != 0 || !strings.Contains(out, ", interrupted ") {
		t.Fatalf("the pass serve stopped in: exit %d\n%s", code, out)
	}
	if code, out, errOut := runCmd(context.Background(), env, "reconcile"); code != 0 {
		t.Fatalf("a pass by hand right after serve stopped: exit %d %s%s", code, out, errOut)
	}
}

// TestStandInsKeepWhatTheyWereToldAcrossARestart: in development the stand-ins for Google
// Play and Paddle keep, in the database, what they were told; a serve restarted still
// reports every earlier purchase, so that replaying its event, or reconciling against
// the stand-in, finds it rather than "unknown to Google".
func TestStandInsKeepWhatTheyWereToldAcrossARestart(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t, map[string]string{"APP_ENV": "development", "PADDLE_WEBHOOK_SECRET": "pdl_ntfset_standins"})
	migrateAndSyncPlans(t, env)
	// With no store's API configured, reconcile names the stand-in that can run.
	playOnly := maps.Clone(env)
	delete(playOnly, "PADDLE_WEBHOOK_SECRET")
	if code, _, errOut := runCmd(ctx, playOnly, "reconcile"); code != 1 || !strings.Contains(errOut, "the development stand-in for playstore can be reconciled while serve runs: tollgate reconcile --provider playstore") {
		t.Errorf("reconcile with no API configured: exit %d %q", code, errOut)
	}
	stop := startServe(t, env)
	const user = "0e7a1c52-1f0b-4c1e-9a55-0000000000aa"
	if code, out, errOut := runCmd(ctx, env, "webhook", "send", "--provider", "playstore", "--user", user); code != 0 || !strings.Contains(out, "outcome: applied") {
		t.Fatalf("a Play purchase: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCmd(ctx, env, "webhook", "send", "--provider", "paddle", "--now", "--user", user,
		"--file", "../billing/testdata/paddle/subscription.created.json"); code != 0 || !strings.Contains(out, "outcome: applied") {
		t.Fatalf("a Paddle subscription: exit %d\n%s%s", code, out, errOut)
	}
	stop()
	startServe(t, env)
	for _, provider := range []string{"playstore", "paddle"} {
		code, out, errOut := runCmd(ctx, env, "reconcile", "--provider", provider)
		if code != 0 || !strings.Contains(out, "reconcile "+provider+": 1 checked, 0 drifted") {
			t.Errorf("reconcile --provider %s after a restart: exit %d\n%s%s", provider, code, out, errOut)
		}
	}
	code, out, errOut := runCmd(ctx, env, "events", "replay", "--provider", "playstore")
	if code != 0 || strings.Contains(out+errOut, "unknown to Google") {
		t.Errorf("replaying the Play purchase after a restart: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := runCmd(ctx, env, "entitlements", "check", user, "exports"); code != 0 {
		t.Errorf("after the restart and the replay the user is not entitled: %s", out)
	}
}
