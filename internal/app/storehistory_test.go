package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

const historyUser = "00000000-0000-4000-8000-000000000d01"

// appStoreAPIEnv is a test environment hearing the App Store, with the stand-in for its
// server API on a loopback port and its key in a .p8 file.
func appStoreAPIEnv(t *testing.T) (map[string]string, *appstoredev.API) {
	t.Helper()
	chain, err := appstoredev.New(appstoredev.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := appstoredev.NewAPI(chain, "com.example.app", "Production")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	roots, p8 := filepath.Join(dir, "roots.pem"), filepath.Join(dir, "AuthKey.p8")
	for path, data := range map[string][]byte{roots: chain.RootPEM(), p8: s.PrivateKeyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return testEnv(t, map[string]string{
		"APPSTORE_BUNDLE_ID": "com.example.app", "APPSTORE_ROOT_CERTS": roots, "APPSTORE_KEY_ID": s.KeyID,
		"APPSTORE_ISSUER_ID": s.IssuerID, "APPSTORE_PRIVATE_KEY_FILE": p8, "APPSTORE_API_BASE": srv.URL,
	}), s
}

// notify has the stand-in send a notification about historyUser's subscription, signed ago.
func notify(t *testing.T, s *appstoredev.API, id, typ string, ago time.Duration) []byte {
	t.Helper()
	now := time.Now()
	body, err := s.Send(appstoredev.Notification{UUID: id, Type: typ, BundleID: "com.example.app", Signed: now.Add(-ago),
		Transaction: &appstoredev.Transaction{OriginalTransactionID: "7000001", TransactionID: "7000001-" + id, BundleID: "com.example.app",
			ProductID: "com.example.app.pro.monthly", AppAccountToken: historyUser, Expires: now.Add(30 * 24 * time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// TestReconcileAppStoreByHand: "reconcile --provider appstore" lists what it would apply
// with --dry-run and applies nothing; then applies every notification missed, once.
func TestReconcileAppStoreByHand(t *testing.T) {
	env, s := appStoreAPIEnv(t)
	ctx := context.Background()
	if code, _, errOut := runCmd(ctx, env, "plans", "sync"); code != 0 {
		t.Fatalf("plans sync: %s", errOut)
	}
	notify(t, s, "hand-1", "SUBSCRIBED", 2*time.Minute)
	notify(t, s, "hand-2", "DID_RENEW", time.Minute)
	d := dbtest.Open(t, env["DATABASE_URL"])
	count := func() (n int) {
		if err := d.QueryRow("select count(*) from provider_events").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	code, out, errOut := runCmd(ctx, env, "reconcile", "--provider", "appstore", "--since", "1h", "--dry-run")
	if code != 0 || !strings.Contains(out, "hand-1 would apply") || !strings.Contains(out, "hand-2 would apply") || count() != 0 {
		t.Fatalf("dry run: %d %q %s, %d stored", code, out, errOut, count())
	}
	code, out, errOut = runCmd(ctx, env, "reconcile", "--provider", "appstore", "--since", "1h")
	if code != 0 || !strings.Contains(out, "hand-1 applied") || !strings.Contains(out, "applied 2, 0 already stored") || count() != 2 {
		t.Fatalf("a pass: %d %q %s, %d stored", code, out, errOut, count())
	}
	code, out, _ = runCmd(ctx, env, "reconcile", "--since", "1h") // every configured provider: the App Store here
	if code != 0 || !strings.Contains(out, "applied 0, 2 already stored") || count() != 2 {
		t.Fatalf("a second pass: %d %q, %d stored", code, out, count())
	}
}

// TestServeCatchesUpOnMissedAppStoreNotifications: notifications Apple sends while tollgate
// is stopped are applied by the next start, in the order Apple signed them, each once; the
// one delivered before is not applied again.
func TestServeCatchesUpOnMissedAppStoreNotifications(t *testing.T) {
	env, s := appStoreAPIEnv(t)
	if code, _, errOut := runCmd(context.Background(), env, "plans", "sync"); code != 0 {
		t.Fatalf("plans sync: %s", errOut)
	}
	bin := buildBinary(t)
	first := startProcess(t, bin, env)
	waitHealthy(t, bin, first)
	body := notify(t, s, "away-1", "SUBSCRIBED", 3*time.Minute)
	resp, err := http.Post("http://"+env["ADDR"]+"/billing/webhooks/appstore", "application/json", strings.NewReader(string(body)))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the delivered notification: %v %v", resp, err)
	}
	resp.Body.Close()
	first.cmd.Process.Signal(syscall.SIGTERM)
	first.done <- <-first.done // stopped; left for the cleanup to see too

	notify(t, s, "away-3", "REFUND", time.Minute) // Apple's history holds them in the order sent,
	notify(t, s, "away-2", "DID_RENEW", 2*time.Minute)
	second := startProcess(t, bin, env)
	waitHealthy(t, bin, second)
	d := dbtest.Open(t, env["DATABASE_URL"])
	state := func() (events int, status string) {
		d.QueryRow("select count(*) from provider_events").Scan(&events)
		d.QueryRow("select status from subscriptions").Scan(&status)
		return events, status
	}
	waitFor(t, func() bool { events, status := state(); return events == 3 && status == "refunded" })
	var outcomes []string
	rows, err := d.Query("select provider_event_id || ' ' || coalesce(status_after, '') from provider_events order by provider_event_id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		rows.Scan(&s)
		outcomes = append(outcomes, s)
	}
	if got := strings.Join(outcomes, ", "); got != "away-1 active, away-2 active, away-3 refunded" {
		t.Fatalf("events after the restart: %s (the renewal applied before the refund, the first stored once)", got)
	}
}

// TestCatchUpProgress: a catch-up by hand shows the pages read, then the notifications done
// out of those read.
func TestCatchUpProgress(t *testing.T) {
	var out strings.Builder
	line := newCatchUpLine(&out, "appstore Production")
	line.tty = true // redrawn in place, as on a terminal
	line.update(pipeline.CatchUpSummary{Pages: 3, Read: 45})
	line.update(pipeline.CatchUpSummary{Pages: 3, Read: 45, Applied: 5, Stored: 15})
	line.done()
	got := out.String()
	for _, want := range []string{"appstore Production 3 page(s) read, 45 notification(s)", "20 of 45 done (5 applied)"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress %q lacks %q", got, want)
		}
	}
	if !strings.HasSuffix(got, "\n") {
		t.Errorf("the redrawn line is not ended: %q", got)
	}
}
