package db_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/logcapture"
)

// TestBillingWritesNotify: what a billing answer is made of notifies tollgate_billing when
// its transaction commits, with the user, or '*' for a plans sync; nothing for a rollback.
// On SQLite the notifications go through a polled table, with the same result.
func TestBillingWritesNotify(t *testing.T) {
	dbtest.Engines(t, testBillingWritesNotify)
}

func testBillingWritesNotify(t *testing.T, d *db.DB) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Listen(ctx, "tollgate_billing", slog.New(slog.NewTextHandler(io.Discard, nil)), func(p string) { got <- p })
	}()
	// On Postgres the channel is the database's, which tests of other packages share (each
	// in its schema): their notifications, of other users and of their plans syncs, are
	// passed over. This test's user is its own, so a notification of it out of turn (the
	// rolled-back write's) still fails.
	user := fmt.Sprintf("5a4c8162-3b1e-4f7a-9d2c-%012d", time.Now().UnixNano()%1e12)
	next := func(want string) {
		t.Helper()
		for {
			select {
			case p := <-got:
				switch {
				case p == want:
					return
				case p == user || p == "" || d.Engine == db.SQLite:
					t.Fatalf("notified %q, want %q", p, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no notification, want %q", want)
			}
		}
	}
	next("") // listening: start afresh

	now := time.Now()
	exec := func(query string, args ...any) {
		t.Helper()
		if _, err := d.ExecContext(ctx, query, args...); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := d.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("insert into usage_counters (user_id, name, period_end, used, created_at, updated_at) values ($1, 'projects', $2, 1, $2, $2)", user, now); err != nil {
		t.Fatal(err)
	}
	tx.Rollback()
	exec("update plans_version set version = version + 1")
	next("*") // and not the rolled-back usage before it
	exec("insert into usage_counters (user_id, name, period_end, used, created_at, updated_at) values ($1, 'projects', $2, 1, $2, $2)", user, now)
	next(user)
	exec("insert into plans (key, name, tier, is_default, created_at, updated_at) values ('pro', 'Pro', 1, false, $1, $1)", now)
	exec("insert into billing_customers (user_id, created_at, updated_at) values ($1, $2, $2)", user, now)
	exec("insert into provider_subscriptions (provider, provider_subscription_id, created_at, updated_at) values ('web', 'sub_1', $1, $1)", now)
	exec(`insert into subscriptions (provider_subscription_id, billing_customer_id, plan_id, provider, status, created_at, updated_at)
		select ps.id, c.id, p.id, 'web', 'active', $1, $1 from provider_subscriptions ps, billing_customers c, plans p`, now)
	next(user)
	exec("update subscriptions set status = 'expired'")
	next(user)
	cancel()
	<-done
}

// TestSQLiteNotificationsPrunedUnreadStartAfresh: the SQLite log keeps its last rows only;
// a listener that finds rows pruned before it read them is told to start afresh ("")
// rather than miss a change, and then reads on from what is left.
func TestSQLiteNotificationsPrunedUnreadStartAfresh(t *testing.T) {
	d := dbtest.SQLite(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Listen(ctx, "tollgate_billing", slog.New(slog.NewTextHandler(io.Discard, nil)), func(p string) { got <- p })
	}()
	if p := <-got; p != "" {
		t.Fatalf("first notification %q, want \"\" (listening)", p)
	}
	// 1300 plans syncs in one transaction: the listener cannot read between them, and the
	// log prunes all but the last 1024 or so before it can.
	err := d.InTx(ctx, func(tx *sql.Tx) error {
		for range 1300 {
			if _, err := tx.Exec("update plans_version set version = version + 1"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(5 * time.Second)
	afresh, stars := false, 0
	for stars < 1024 {
		select {
		case p := <-got:
			switch {
			case p == "" && stars == 0:
				afresh = true
			case p == "*":
				stars++
			default:
				t.Fatalf("notified %q after %d of '*'", p, stars)
			}
		case <-deadline:
			t.Fatalf("%d notifications of 1300 read in 5 s", stars)
		}
	}
	if !afresh {
		t.Fatal("rows were pruned unread and the listener was not told to start afresh")
	}
	var left int
	if err := d.QueryRow("select count(*) from notifications").Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left >= 1300 || left < 1024 {
		t.Fatalf("the log holds %d rows after 1300 notifications, want its last 1024 to 1151", left)
	}
	cancel()
	<-done
}

// TestAListenerLogsAnOutageOnce: a listener that loses its connection for a few seconds
// logs one warning when it does and one line when it is back — not one a second — and
// then hears notifications again.
func TestAListenerLogsAnOutageOnce(t *testing.T) {
	t.Parallel()
	proxied, _, proxy := dbtest.PostgresBehindProxy(t)
	d := dbtest.Open(t, proxied)
	var logs logcapture.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 64)
	go d.Listen(ctx, "tollgate_outage_test", log, func(p string) { got <- p })
	if p := <-got; p != "" {
		t.Fatalf("first %q, want the fresh start", p)
	}
	proxy.Cut()
	time.Sleep(3500 * time.Millisecond) // the outage: several retries' worth
	proxy.Start()
	select {
	case p := <-got:
		if p != "" {
			t.Fatalf("after the outage %q, want a fresh start", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not come back")
	}
	if _, err := d.Exec("select pg_notify('tollgate_outage_test', 'after')"); err != nil {
		t.Fatal(err)
	}
	if p := <-got; p != "after" {
		t.Fatalf("after coming back: %q", p)
	}
	text := logs.String()
	if warns := strings.Count(text, "level=WARN"); warns != 1 || strings.Count(text, "database notifications back") != 1 ||
		strings.Count(text, "still interrupted") < 2 {
		t.Fatalf("%d warnings; want one, one line when back, the retries at debug:\n%s", warns, text)
	}
}
