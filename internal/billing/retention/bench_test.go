package retention_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/retention"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// BenchmarkPrune is one retention pass over a table of old events, on each engine: the
// events removed a second, and what the events took per event before (Postgres: the table
// with its indexes and TOAST; SQLite: the whole file). Each event's payload is about 300
// bytes of hex, a tenth of them 3 KB (a web subscription event is 2–4 KB), which compresses
// about as well as real JSON does. 100 thousand events; a million with TOLLGATE_BIG_BENCH=1:
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
	for _, engine := range []string{"postgres", "sqlite"} {
		open := map[string]func(testing.TB) *db.DB{"postgres": dbtest.Postgres, "sqlite": dbtest.SQLite}[engine]
		b.Run(engine, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				d := open(b)
				ctx := context.Background()
				seedOld(b, d, time.Now().UTC().Add(-500*24*time.Hour), events)
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

// postgresSeed inserts $2 events received a second apart from $1, by bulk SQL.
const postgresSeed = `insert into provider_events (provider, provider_event_id, event_type, payload, received_at, processed_at, outcome, created_at, updated_at)
	select 'web', 'evt_' || i, 'customer.subscription.updated',
		jsonb_build_object('id', 'evt_' || i, 'pad', (select string_agg(md5((i * 100 + k)::text), '')
			from generate_series(1, case when i % 10 = 0 then 94 else 9 end) k)),
		$1::timestamptz + i * interval '1 second', $1, 'applied', $1, $1
	from generate_series(1, $2::int) i`

// seedOld stores events old events, received a second apart from old: by bulk SQL on
// Postgres; on SQLite, whose times the driver writes, one insert each in one transaction.
func seedOld(b *testing.B, d *db.DB, old time.Time, events int) {
	ctx := context.Background()
	if d.Engine == db.Postgres {
		if _, err := d.ExecContext(ctx, postgresSeed, old, events); err != nil {
			b.Fatal(err)
		}
		return
	}
	pad := make([]byte, 1500)
	err := d.InTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `insert into provider_events (provider, provider_event_id, event_type, payload, received_at, processed_at, outcome, created_at, updated_at)
			values ('web', $1, 'customer.subscription.updated', $2, $3, $3, 'applied', $3, $3)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for i := 1; i <= events; i++ {
			n := 150
			if i%10 == 0 {
				n = 1500
			}
			rand.Read(pad[:n])
			id := fmt.Sprint("evt_", i)
			payload := fmt.Appendf(nil, `{"id":%q,"pad":"%x"}`, id, pad[:n])
			if _, err := stmt.ExecContext(ctx, id, payload, old.Add(time.Duration(i)*time.Second)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// tableSize is what the events take: on Postgres provider_events with its indexes and
// TOAST; on SQLite the whole file, which holds little else here.
func tableSize(b *testing.B, d *db.DB) int64 {
	query := map[db.Engine]string{
		db.Postgres: `select pg_total_relation_size('provider_events')`,
		db.SQLite:   `select page_count * page_size from pragma_page_count(), pragma_page_size()`,
	}[d.Engine]
	var n int64
	if err := d.QueryRow(query).Scan(&n); err != nil {
		b.Fatal(fmt.Errorf("size: %w", err))
	}
	return n
}
