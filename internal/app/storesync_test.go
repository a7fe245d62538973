package app

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoretest"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/playstore/playstoretest"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"google.golang.org/api/androidpublisher/v3"
)

const historyUser = "00000000-0000-4000-8000-000000000d01"

// historyExpires is when the period of historyUser's subscription ends: one period, which
// its renewal and refund both name.
var historyExpires = time.Now().Add(30 * 24 * time.Hour)

// appStoreAPIEnv is a test environment hearing the App Store, with the stand-in for its
// server API on a loopback port and its key in a .p8 file.
func appStoreAPIEnv(t *testing.T) (map[string]string, *appstoretest.API) {
	t.Helper()
	chain, err := appstoredev.New(appstoredev.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := appstoretest.New(chain, "com.example.app", "Production")
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
func notify(t *testing.T, s *appstoretest.API, id, typ string, ago time.Duration) []byte {
	t.Helper()
	now := time.Now()
	body, err := s.Send(appstoredev.Notification{UUID: id, Type: typ, BundleID: "com.example.app", Signed: now.Add(-ago),
		Transaction: &appstoredev.Transaction{OriginalTransactionID: "7000001", TransactionID: "7000001-" + id, BundleID: "com.example.app",
			ProductID: "com.example.app.pro.monthly", AppAccountToken: historyUser, Expires: historyExpires}})
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
	migrateAndSyncPlans(t, env)
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
	// Further back than Apple keeps: the read starts inside its window, completes, and
	// says from when it read and why.
	code, out, errOut = runCmd(ctx, env, "reconcile", "--provider", "appstore", "--since", "400d")
	if code != 0 || !strings.Contains(out, "already stored") {
		t.Fatalf("from 400 days back: %d %q %s", code, out, errOut)
	}
	// A pass whose process died (no lease held) shows as interrupted, not running.
	if _, err := d.Exec("insert into reconcile_runs (provider, dry_run, started_at) values ('appstore', false, $1)", time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCmd(ctx, env, "reconcile", "status", "--limit", "1")
	if code != 0 || !strings.Contains(out, "interrupted (its process stopped") ||
		!strings.Contains(out, "appstore history Production: complete until") || !strings.Contains(out, "but the store keeps 180 days of history: read from") {
		t.Fatalf("status: %d\n%s", code, out)
	}
}

// TestServeCatchesUpOnMissedAppStoreNotifications: notifications Apple sends while tollgate
// is stopped are applied by the next start, in the order Apple signed them, each once; the
// one delivered before is not applied again.
func TestServeCatchesUpOnMissedAppStoreNotifications(t *testing.T) {
	env, s := appStoreAPIEnv(t)
	migrateAndSyncPlans(t, env)
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
	// Apple's status agrees with the history: the pass after the catch-up finds no drift.
	err = s.SetStatus(appstoredev.Status{Code: appstore.StatusRevoked, Signed: time.Now(), Transaction: appstoredev.Transaction{
		OriginalTransactionID: "7000001", TransactionID: "7000001-away-3", BundleID: "com.example.app", ProductID: "com.example.app.pro.monthly",
		AppAccountToken: historyUser, Expires: historyExpires, Revoked: time.Now().Add(-time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	env["RECONCILE_INTERVAL"] = "1h"
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
	waitFor(t, func() bool {
		var checked, drifted int
		err := d.QueryRow("select checked, drifted from reconcile_runs where provider = 'appstore' and finished_at is not null").Scan(&checked, &drifted)
		return err == nil && checked == 1 && drifted == 0
	})
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

// TestReconcilePlayStoreByHand: "reconcile --provider playstore" reads Google Play's
// voided purchases and applies the void of a purchase whose push was lost (--dry-run
// lists it and applies nothing), then reads each subscription; run again, it changes
// nothing.
func TestReconcilePlayStoreByHand(t *testing.T) {
	t.Parallel()
	g := playstoretest.Start(t)
	key := filepath.Join(t.TempDir(), "play.json")
	if err := os.WriteFile(key, g.ServiceAccountJSON(), 0o600); err != nil {
		t.Fatal(err)
	}
	const audience, pusher = "https://billing.example.test/billing/webhooks/playstore", "push@example.iam.gserviceaccount.com"
	env := testEnv(t, map[string]string{"PLAY_PACKAGE_NAME": "com.example.app", "PLAY_PUSH_AUDIENCE": audience,
		"PLAY_PUSH_SERVICE_ACCOUNT": pusher, "PLAY_PUSH_JWKS_URL": g.JWKSURL(), "PLAY_SERVICE_ACCOUNT_JSON": key, "PLAY_API_BASE": g.URL + "/"})
	ctx := context.Background()
	migrateAndSyncPlans(t, env)
	now := time.Now()
	purchase := billingtest.PlayOrder("SUBSCRIPTION_STATE_ACTIVE", historyUser, now.Add(30*24*time.Hour), "GPA.3300-0001")
	purchase.LineItems[0].ProductId = "com.example.app.pro.monthly"
	g.SetPurchase("tok-hand", purchase)
	stop := startServe(t, env)
	push := playstoretest.Push("m-hand", map[string]any{"packageName": "com.example.app", "eventTimeMillis": fmt.Sprint(now.UnixMilli()),
		"subscriptionNotification": map[string]any{"notificationType": 4, "purchaseToken": "tok-hand", "subscriptionId": "com.example.app.pro.monthly"}})
	token := g.PushToken(jwt.MapClaims{"iss": "https://accounts.google.com", "aud": audience, "email": pusher, "email_verified": true,
		"sub": "1", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}, nil)
	req, _ := http.NewRequest("POST", "http://"+env["ADDR"]+"/billing/webhooks/playstore", strings.NewReader(string(push)))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the push: %v %v", resp, err)
	}
	resp.Body.Close()
	stop()
	g.Void(androidpublisher.VoidedPurchase{PurchaseToken: "tok-hand", OrderId: "GPA.3300-0001", VoidedTimeMillis: time.Now().UnixMilli()})

	d := dbtest.Open(t, env["DATABASE_URL"])
	status := func() (s string) {
		if err := d.QueryRow("select status from subscriptions").Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	code, out, errOut := runCmd(ctx, env, "reconcile", "--provider", "playstore", "--dry-run")
	if code != 0 || !strings.Contains(out, "void:GPA.3300-0001 would apply") || status() != "active" {
		t.Fatalf("dry run: %d %q %s, %s", code, out, errOut, status())
	}
	code, out, errOut = runCmd(ctx, env, "reconcile", "--provider", "playstore")
	if code != 0 || !strings.Contains(out, "void:GPA.3300-0001 applied") || !strings.Contains(out, "reconcile playstore: 1 checked, 0 drifted") || status() != "refunded" {
		t.Fatalf("reconcile: %d %q %s, %s", code, out, errOut, status())
	}
	code, out, errOut = runCmd(ctx, env, "reconcile")
	if code != 0 || !strings.Contains(out, "applied 0, 1 already stored") || !strings.Contains(out, "reconcile playstore: 1 checked, 0 drifted") || status() != "refunded" {
		t.Fatalf("again: %d %q %s, %s", code, out, errOut, status())
	}
}

// TestReconcileAppStoreWithAWrongKey: a key Apple refuses (401) stops the pass at once with
// an error naming the settings, and changes nothing: no notification applied, no read
// recorded as complete.
func TestReconcileAppStoreWithAWrongKey(t *testing.T) {
	t.Parallel()
	env, s := appStoreAPIEnv(t)
	other, err := appstoretest.New(s.Chain, "com.example.app", "Production")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(env["APPSTORE_PRIVATE_KEY_FILE"], other.PrivateKeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	notify(t, s, "wrong-key-1", "SUBSCRIBED", time.Minute)
	if code, _, errOut := runCmd(context.Background(), env, "migrate"); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	code, _, errOut := runCmd(context.Background(), env, "reconcile", "--provider", "appstore", "--since", "1h")
	if code == 0 || !strings.Contains(errOut, "APPSTORE_PRIVATE_KEY_FILE") || strings.Contains(errOut, "PRIVATE KEY") {
		t.Fatalf("a wrong key: %d %q", code, errOut)
	}
	d := dbtest.Open(t, env["DATABASE_URL"])
	var events, reads int
	if err := d.QueryRow("select (select count(*) from provider_events), (select count(*) from store_history)").Scan(&events, &reads); err != nil || events != 0 || reads != 0 {
		t.Fatalf("after a refused key: %d events, %d reads recorded, %v", events, reads, err)
	}
}

// TestPlayPassStaysUnderGooglesLimit: whatever RECONCILE_PACE says, a Google Play pass
// reads no more than 40 purchases a second.
func TestPlayPassStaysUnderGooglesLimit(t *testing.T) {
	t.Parallel()
	g := playstoretest.Start(t)
	key := filepath.Join(t.TempDir(), "play.json")
	if err := os.WriteFile(key, g.ServiceAccountJSON(), 0o600); err != nil {
		t.Fatal(err)
	}
	env := testEnv(t, map[string]string{"PLAY_PACKAGE_NAME": "com.example.app", "PLAY_PUSH_AUDIENCE": "a", "PLAY_PUSH_SERVICE_ACCOUNT": "s",
		"PLAY_SERVICE_ACCOUNT_JSON": key, "PLAY_API_BASE": g.URL + "/", "RECONCILE_PACE": "100"})
	ctx := context.Background()
	migrateAndSyncPlans(t, env)
	d := dbtest.Open(t, env["DATABASE_URL"])
	const known = 61
	for i := range known { // purchase tokens tollgate knows, as a store's push leaves them
		if _, err := d.Exec("insert into provider_subscriptions (provider, provider_subscription_id, created_at, updated_at) values ('playstore', $1, $2, $2)",
			fmt.Sprintf("tok-pace-%02d", i), time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errOut := runCmd(ctx, env, "reconcile", "--provider", "playstore"); code != 0 || !strings.Contains(out, fmt.Sprintf("%d checked", known)) {
		t.Fatalf("reconcile: %d %q %s", code, out, errOut)
	}
	reads := g.Reads()
	if len(reads) != known {
		t.Fatalf("%d purchases read, want %d", len(reads), known)
	}
	// A burst of one, then 40 a second: the 61st read comes 1.5 s after the first at the
	// soonest (100 a second would take 0.6 s).
	if took := reads[known-1].Sub(reads[0]); took < 1450*time.Millisecond {
		t.Fatalf("%d reads in %v: faster than 40 a second", known, took)
	}
}

// TestAKilledPassIsTakenUpByAnotherInstance: a serve killed (SIGKILL) in the middle of an
// App Store pass leaves its lease to run out by itself; another instance, whatever
// RECONCILE_INTERVAL says, takes the interrupted pass up within 40 s and finishes it, and
// the killed pass shows as interrupted.
func TestAKilledPassIsTakenUpByAnotherInstance(t *testing.T) {
	t.Parallel() // its own processes and database; it mostly waits
	env, s := appStoreAPIEnv(t)
	migrateAndSyncPlans(t, env)
	bin := buildBinary(t)
	seeding := startProcess(t, bin, env) // RECONCILE_INTERVAL unset: no pass yet
	waitHealthy(t, bin, seeding)
	for _, id := range []string{"kill-1", "kill-2", "kill-3"} {
		resp, err := http.Post("http://"+env["ADDR"]+"/billing/webhooks/appstore", "application/json",
			strings.NewReader(string(notifySubscription(t, s, id))))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %v", id, resp, err)
		}
		resp.Body.Close()
	}
	seeding.cmd.Process.Signal(syscall.SIGTERM)
	seeding.done <- <-seeding.done

	s.SlowStatuses(1500 * time.Millisecond) // a pass of three takes seconds
	env["RECONCILE_INTERVAL"] = "24h"
	killed := startProcess(t, bin, env)
	d := dbtest.Open(t, env["DATABASE_URL"])
	running := func() bool {
		var n int
		d.QueryRow("select count(*) from reconcile_runs where provider = 'appstore' and finished_at is null and checked = 0").Scan(&n)
		return n == 1
	}
	waitFor(t, running)
	other := map[string]string{}
	for k, v := range env {
		other[k] = v
	}
	other["ADDR"] = holdAddr(t)
	other["PUBLIC_URL"] = "http://" + other["ADDR"]
	taker := startProcess(t, bin, other)
	waitHealthy(t, bin, taker)
	killed.cmd.Process.Signal(syscall.SIGKILL)
	killed.done <- <-killed.done
	killedAt := time.Now()

	deadline := killedAt.Add(40 * time.Second)
	for {
		var started time.Time
		err := d.QueryRow("select started_at from reconcile_runs where provider = 'appstore' and id > 1 order by id limit 1").Scan(&started)
		if err == nil {
			t.Logf("the other instance's pass began %v after the kill", time.Since(killedAt).Round(100*time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pass by the other instance within 40 s of the kill:\n%s", taker.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		var first, second string
		d.QueryRow("select case when interrupted then 'interrupted' else 'other' end from reconcile_runs where id = 1").Scan(&first)
		d.QueryRow("select coalesce(error, '') || ' ' || checked from reconcile_runs where id = 2 and finished_at is not null").Scan(&second)
		if first == "interrupted" && second == " 3" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed pass %q, the other's %q: want interrupted, and all three checked", first, second)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// notifySubscription has the stand-in send a subscription of its own, signed a minute ago,
// whose status Apple's API then answers.
func notifySubscription(t *testing.T, s *appstoretest.API, id string) []byte {
	t.Helper()
	tx := appstoredev.Transaction{OriginalTransactionID: "7100-" + id, TransactionID: "7100-" + id + "-1", BundleID: "com.example.app",
		ProductID: "com.example.app.pro.monthly", AppAccountToken: historyUser, Expires: historyExpires}
	body, err := s.Send(appstoredev.Notification{UUID: id, Type: "SUBSCRIBED", BundleID: "com.example.app", Signed: time.Now().Add(-time.Minute), Transaction: &tx})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetStatus(appstoredev.Status{Code: appstore.StatusActive, Signed: time.Now(), Transaction: tx, AutoRenew: true}); err != nil {
		t.Fatal(err)
	}
	return body
}
