package retention_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/retention"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// BenchmarkPrune is one retention pass over a table of old events, on each engine: the
// events removed a second, and what the table took per event before. Each event's payload
// is 300 bytes, a tenth of them 3 KB (a web subscription event is 2–4 KB). 100 thousand
// events; a million with TOLLGATE_BIG_BENCH=1:
//
//	TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test go test -run '^$' -bench Prune -benchtime 1x ./internal/billing/retention
func BenchmarkPrune(b *testing.B) {
	events := 100_000
	if os.Getenv("TOLLGATE_BIG_BENCH") == "1" {
		events = 1_000_000
	}
	if testing.Short() || os.Getenv("CI") != "" && os.Getenv("TOLLGATE_BIG_BENCH") == "" {
		events = 5_000 // CI's smoke run: it must run, not measure
	}
	seeds := map[db.Engine]string{
		db.Postgres: `insert into provider_events (provider, provider_event_id, event_type, payload, received_at, processed_at, outcome, created_at, updated_at)
			select 'web', 'evt_' || i, 'customer.subscription.updated',
				jsonb_build_object('id', 'evt_' || i, 'pad', repeat('x', case when i % 10 = 0 then 3000 else 300 end)),
				$1::timestamptz + i * interval '1 second', $1, 'applied', $1, $1
			from generate_series(1, $2::int) i`,
		db.SQLite: `insert into provider_events (provider, provider_event_id, event_type, payload, received_at, processed_at, outcome, created_at, updated_at)
			with recursive n(i) as (select 1 union all select i + 1 from n where i < $2)
			select 'web', 'evt_' || i, 'customer.subscription.updated',
				cast('{"id":"evt_' || i || '","pad":"' || substr(hex(zeroblob(1500)), 1, case when i % 10 = 0 then 3000 else 300 end) || '"}' as blob),
				$1, $1, 'applied', $1, $1
			from n`,
	}
	for _, engine := range []string{"postgres", "sqlite"} {
		open := map[string]func(testing.TB) *db.DB{"postgres": dbtest.Postgres, "sqlite": dbtest.SQLite}[engine]
		b.Run(engine, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				d := open(b)
				ctx := context.Background()
				old := time.Now().UTC().Add(-500 * 24 * time.Hour)
				if _, err := d.ExecContext(ctx, seeds[d.Engine], old, events); err != nil {
					b.Fatal(err)
				}
				size := tableSize(b, d)
				b.StartTimer()
				start := time.Now()
				res, err := retention.New(d, retention.Options{Window: 400 * 24 * time.Hour, Unresolved: 800 * 24 * time.Hour}).Pass(ctx, false)
				elapsed := time.Since(start)
				if err != nil || res.Removed != events {
					b.Fatalf("removed %d of %d: %v", res.Removed, events, err)
				}
				b.ReportMetric(float64(events)/elapsed.Seconds(), "removed/s")
				if size > 0 {
					b.ReportMetric(float64(size)/float64(events), "bytes/event")
				}
			}
		})
	}
}

// tableSize is what provider_events takes with its indexes and TOAST (Postgres; 0 on SQLite,
// whose file is shared by every table).
func tableSize(b *testing.B, d *db.DB) int64 {
	if d.Engine != db.Postgres {
		return 0
	}
	var n int64
	if err := d.QueryRow(`select pg_total_relation_size('provider_events')`).Scan(&n); err != nil {
		b.Fatal(fmt.Errorf("table size: %w", err))
	}
	return n
}
