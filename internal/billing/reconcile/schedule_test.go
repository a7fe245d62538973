package reconcile_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// Inside serve passes follow the record: on a fresh database, or one whose last pass
// ended longer than the interval ago, a pass starts at once; right after a pass, a
// restarted process waits for the interval to be up; Run returns once ctx ends.
func TestReconcileScheduleFromTheRecord(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.account.subs = []string{subscription("sub_every", userN(40), "active", time.Now().UTC().Add(-time.Hour))}
		run := func(r *reconcile.Reconciler, interval time.Duration, until func() bool) {
			t.Helper()
			ctx, cancel := context.WithCancel(context.Background())
			stopped := make(chan struct{})
			go func() { r.Run(ctx, interval); close(stopped) }()
			for deadline := time.Now().Add(10 * time.Second); !until(); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					cancel()
					t.Fatalf("no pass within 10 s at an interval of %s (%d recorded)", interval, f.passes(t))
				}
			}
			cancel()
			<-stopped
		}
		run(f.reconciler(f.read, nil), time.Hour, func() bool { return f.passes(t) == 1 })
		if f.status(t, "sub_every") != "active" {
			t.Fatal("the pass repaired nothing")
		}
		var ended time.Time
		if err := d.QueryRow("select finished_at from reconcile_runs").Scan(&ended); err != nil {
			t.Fatal(err)
		}
		restarted := f.reconciler(f.read, nil)
		next, err := restarted.Next(context.Background(), time.Hour)
		if err != nil || !next.Equal(ended.Add(time.Hour)) {
			t.Fatalf("after a pass that ended at %s, the next is due at %s (%v)", ended, next, err)
		}
		// Restarted right after that pass, a process waits for the hour: it starts none.
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		restarted.Run(ctx, time.Hour)
		cancel()
		if n := f.passes(t); n != 1 {
			t.Fatalf("a process restarted right after a pass ran %d more", n-1)
		}
		// The last pass that counts ended two hours ago: a pass at once.
		if _, err := d.Exec("update reconcile_runs set finished_at = $1", time.Now().UTC().Add(-2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		run(restarted, time.Hour, func() bool { return f.passes(t) == 2 })
	})
}

// passes counts the passes that finished.
func (f *fixture) passes(t *testing.T) int {
	t.Helper()
	var n int
	if err := f.d.QueryRow("select count(*) from reconcile_runs where finished_at is not null").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The schedule counts any process's passes that ended, failed ones too, but not dry runs
// nor interrupted ones.
func TestReconcileWhichPassesCount(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		insert := func(provider string, dryRun, interrupted bool, failed string, ended time.Time) {
			t.Helper()
			var errText any
			if failed != "" {
				errText = failed
			}
			if _, err := d.Exec("insert into reconcile_runs (provider, dry_run, started_at, finished_at, interrupted, error) values ($1, $2, $3, $4, $5, $6)",
				provider, dryRun, ended.Add(-time.Minute), ended, interrupted, errText); err != nil {
				t.Fatal(err)
			}
		}
		r := f.reconciler(f.read, nil)
		next := func() time.Time {
			t.Helper()
			n, err := r.Next(context.Background(), time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if !next().IsZero() {
			t.Fatal("a fresh database has a pass scheduled later")
		}
		insert(billing.ProviderWeb, false, false, "", base)
		insert(billing.ProviderWeb, true, false, "", base.Add(time.Minute))   // a dry run
		insert(billing.ProviderWeb, false, true, "", base.Add(2*time.Minute)) // interrupted
		insert(appstore.Provider, false, false, "", base.Add(3*time.Minute))  // another provider
		if got := next(); !got.Equal(base.Add(time.Hour)) {
			t.Fatalf("next %s, want an hour after the pass that counts", got)
		}
		insert(billing.ProviderWeb, false, false, "the provider failed", base.Add(4*time.Minute))
		if got := next(); !got.Equal(base.Add(4*time.Minute + time.Hour)) {
			t.Fatalf("next %s, want an hour after the failed pass", got)
		}
	})
}

// Two processes share one cadence: together they pass no more often than one would, and
// never at once.
func TestReconcileTwoProcessesShareOneCadence(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.account.subs = []string{subscription("sub_shared", userN(41), "active", time.Now().UTC().Add(-time.Hour))}
		const interval = 300 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() { defer wg.Done(); f.reconciler(f.read, nil).Run(ctx, interval) }()
		}
		for deadline := time.Now().Add(20 * time.Second); f.passes(t) < 4; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d passes in 20 s", f.passes(t))
			}
		}
		cancel()
		wg.Wait()
		rows, err := d.Query("select started_at, finished_at from reconcile_runs where finished_at is not null order by started_at")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var prevEnd time.Time
		for rows.Next() {
			var started, ended time.Time
			if err := rows.Scan(&started, &ended); err != nil {
				t.Fatal(err)
			}
			// Started no sooner than the interval after the last one ended (less the
			// timestamps' rounding).
			if !prevEnd.IsZero() && started.Before(prevEnd.Add(interval-time.Millisecond)) {
				t.Fatalf("a pass started at %s, %s after the last one ended", started, started.Sub(prevEnd))
			}
			prevEnd = ended
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	})
}
