package app

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/outbound"
	"github.com/tollgate/tollgate/internal/outbound/outboundtest"
)

// userEvent is a web event of user n's own subscription, at created, in status.
func userEvent(t *testing.T, n int, created int64, status string) []byte {
	return editFixture(t, "../billing/testdata/web/customer.subscription.updated.json", func(m map[string]any) {
		m["id"], m["created"] = fmt.Sprintf("evt_user%d_%d", n, created), float64(created)
		sub := m["data"].(map[string]any)["object"].(map[string]any)
		sub["id"], sub["customer"], sub["status"] = fmt.Sprintf("sub_user%d", n), fmt.Sprintf("cus_user%d", n), status
		sub["metadata"] = map[string]any{"user_id": userUUID(n)}
	})
}

func userUUID(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// TestOutboundWebhooksSurviveSIGKILL: a server is killed while its deliveries hang at the
// receiver; restarted, it delivers every change, each user's in order: the ones in flight
// once their lease runs out, the ones waiting behind them after.
func TestOutboundWebhooksSurviveSIGKILL(t *testing.T) {
	bin := buildBinary(t)
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			receiver := outboundtest.NewReceiver(t)
			release := receiver.Hang()
			// A 2 s attempt timeout leases a delivery for 6 s: the killed instance's hanging
			// deliveries go out again that long after it died, not the default 30 s.
			env := testEnv(t, map[string]string{"OUTBOUND_WEBHOOK_URL": receiver.URL, "OUTBOUND_WEBHOOK_SECRET": outboundtest.Secret,
				"OUTBOUND_WEBHOOK_TIMEOUT": "2s"})
			if engine == "postgres" {
				env["DATABASE_URL"] = dbtest.PostgresURL(t)
			}
			migrateAndSyncPlans(t, env)
			serve := func() *process {
				p := startProcess(t, bin, env)
				waitFor(t, func() bool { return healthcheckExit(t, bin, env["ADDR"]) == 0 })
				return p
			}
			first := serve()
			const users = 3
			for n := range users {
				for i, status := range []string{"active", "past_due"} {
					if code, err := postWeb(http.DefaultClient, "http://"+env["ADDR"], userEvent(t, n, 1790856000+int64(i)*60, status)); code != http.StatusOK {
						t.Fatalf("user %d event %d: %d %v", n, i, code, err)
					}
				}
			}
			waitFor(t, func() bool { return receiver.Attempts() == users }) // each user's first, hanging
			if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			first.done <- <-first.done // seen dead; left for the cleanup to see too
			release()

			killed := time.Now()
			serve()
			deadline := time.Now().Add(60 * time.Second)
			for len(receiver.Accepted()) < 2*users {
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d changes delivered within a minute of the restart", len(receiver.Accepted()), 2*users)
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("all delivered %s after the restart", time.Since(killed).Round(time.Second))
			seen, next := map[string]bool{}, map[string]string{}
			for _, d := range receiver.Accepted() {
				if seen[d.MessageID] {
					t.Errorf("%s delivered twice", d.MessageID)
				}
				seen[d.MessageID] = true
				user, status := d.Event.Data.UserID, fmt.Sprint(d.Event.Data.Current["status"])
				want := map[string]string{"": "active", "active": "past_due"}[next[user]]
				if status != want {
					t.Errorf("user %s: a change to %s arrived where the one to %s was due", user, status, want)
				}
				next[user] = status
			}
			if len(seen) != 2*users {
				t.Errorf("%d distinct deliveries, want %d", len(seen), 2*users)
			}
		})
	}
}

// TestDeliveriesCommands: list filters by status and user; retry takes one id or --failed.
func TestDeliveriesCommands(t *testing.T) {
	env := testEnv(t, nil)
	ctx := context.Background()
	if code, _, errOut := runCmd(ctx, env, "migrate"); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	d := dbtest.Open(t, env["DATABASE_URL"])
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	for n := range 3 {
		err := d.InTx(ctx, func(tx *sql.Tx) error {
			return outbound.Record(ctx, dbq.New(tx), userUUID(n), "entitlements.changed", []byte(`{}`), at)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Listing moves the recorded events in; the states below are set on moved ones.
	if _, err := outbound.List(ctx, d, outbound.Filter{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(`update outbound_deliveries set status = 'failed', attempts = 70, last_error = 'answered 500' where id = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(`update outbound_deliveries set status = 'delivered', attempts = 1, delivered_at = next_attempt_at where id = 3`); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		args      []string
		code      int
		want, not []string
	}{
		{[]string{"deliveries", "list"}, 0, []string{
			"3  msg_", "user " + userUUID(2) + "  2026-11-20T09:00:00Z  delivered  attempts 1  delivered 2026-11-20T09:00:00Z\n",
			"user " + userUUID(1) + "  2026-11-20T09:00:00Z  pending  attempts 0  next 2026-11-20T09:00:00Z\n",
			"user " + userUUID(0) + "  2026-11-20T09:00:00Z  failed  attempts 70  last error: answered 500\n",
		}, nil},
		{[]string{"deliveries", "list", "--failed"}, 0, []string{"1  msg_"}, []string{"pending", "delivered"}},
		{[]string{"deliveries", "list", "--user", userUUID(1)}, 0, []string{"2  msg_"}, []string{userUUID(0), userUUID(2)}},
		{[]string{"deliveries", "list", "--user", "nobody"}, 1, []string{`--user: want the identity user's UUID, got "nobody"`}, nil},
		{[]string{"deliveries", "retry"}, 2, []string{"give either an ID or --failed", "Usage:"}, nil},
		{[]string{"deliveries", "retry", "1", "--failed"}, 2, []string{"give either an ID or --failed"}, nil},
		{[]string{"deliveries", "retry", "3"}, 1, []string{"delivery 3: no pending or failed delivery has this id"}, nil},
		{[]string{"deliveries", "retry", "x"}, 2, []string{`ID: want a delivery id from "deliveries list", got "x"`}, nil},
		{[]string{"deliveries", "retry", "--failed"}, 0, []string{"1 failed deliveries are due again"}, nil},
		{[]string{"deliveries", "list", "--failed"}, 0, []string{"no deliveries"}, nil},
		{[]string{"deliveries", "retry", "2"}, 0, []string{"delivery 2 is due again"}, nil},
	} {
		code, out, errOut := runCmd(ctx, env, tc.args...)
		all := out + errOut
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, code, tc.code, all)
		}
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, all)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(all, n) {
				t.Errorf("%v: output has %q:\n%s", tc.args, n, all)
			}
		}
	}
	var status string
	var attempts int
	if err := d.QueryRow(`select status, attempts from outbound_deliveries where id = 1`).Scan(&status, &attempts); err != nil || status != "pending" {
		t.Errorf("after retry --failed: %s, %v", status, err)
	}
}
