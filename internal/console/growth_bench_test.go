package console

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/grant"
	"github.com/tollgate/tollgate/internal/billing/grants"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/retention"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/identity"
)

// BenchmarkGrowth measures, side by side on Postgres, a database of 10 thousand stored
// events (1 thousand users) and a large one: 10 million events and 1 million users with
// TOLLGATE_BIG_BENCH=1, 100 thousand otherwise, and 10 thousand in CI's smoke run. For
// each: web ingestion over the webhook handler, every console page, a user's answer read
// anew (what /api/v1/me asks billing), and the database's size before and after a
// retention pass (a 400-day window over two years of events) and VACUUM FULL. It prints the
// table. Each size is seeded once, by bulk SQL, into a template database that later runs
// copy (tollgate_growth_<events>_v1; drop it to seed again); seeding is not timed.
//
//	TOLLGATE_BIG_BENCH=1 TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test go test -run '^$' -bench Growth -benchtime 1x -timeout 60m ./internal/console
func BenchmarkGrowth(b *testing.B) {
	large := 100_000
	switch {
	case os.Getenv("TOLLGATE_BIG_BENCH") == "1":
		large = 10_000_000
	case os.Getenv("CI") != "":
		large = 10_000
	}
	for range b.N {
		small := measureGrowth(b, 10_000)
		big := measureGrowth(b, large)
		printGrowth(b, small, big)
	}
}

// growth is what one size measured.
type growth struct {
	events                int
	ingestPerSecond       float64
	pages                 map[string]time.Duration
	standing              time.Duration // working out the overview's and plans' counts
	answer                time.Duration
	sizeBefore, sizeAfter int64
	removed               int
}

var growthPages = []struct{ name, path string }{
	{"overview", "/admin"}, {"customers", "/admin/customers"}, {"search e-mail", "/admin/customers?q=user77@"},
	{"search id", "/admin/customers?q=cus_77"}, {"customer", "/admin/customers/00000000-0000-4000-8000-000000000077"},
	{"events", "/admin/events"}, {"events unresolved", "/admin/events?outcome=unresolved"}, {"deliveries", "/admin/deliveries"},
	{"plans", "/admin/plans"}, {"audit", "/admin/audit"},
}

func measureGrowth(b *testing.B, events int) growth {
	b.StopTimer()
	d := growthDB(b, events)
	b.StartTimer()
	g := growth{events: events, pages: map[string]time.Duration{}}
	ctx := context.Background()
	h := billingtest.New(b, d, billingtest.WithAdapters(grant.New()))
	g.ingestPerSecond = ingestRate(b, h, 300)
	log := slog.New(slog.DiscardHandler)
	confirmed := time.Now()
	operator := &identity.User{Email: "ops@example.test", EmailConfirmedAt: &confirmed}
	c, err := New(Options{
		DB: d, Operators: []string{"ops@example.test"}, Log: log, NotFound: http.NotFound,
		CurrentUser: func(context.Context) (*identity.User, error) { return operator, nil },
		Billing:     h.Svc.Reader, Pipeline: h.Svc.Pipeline, Grants: grants.New(d, h.Svc.Pipeline, log, nil),
	})
	if err != nil {
		b.Fatal(err)
	}
	// As serve does at start-up (RunSnapshots), and then every minute when it is slow.
	g.standing = timed(1, func() {
		if _, err := c.workOutStanding(ctx); err != nil {
			b.Fatal(err)
		}
	})
	handler := c.Handler()
	for _, page := range growthPages {
		g.pages[page.name] = timed(3, func() {
			w := httptest.NewRecorder()
			handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, page.path, nil))
			if w.Code != http.StatusOK {
				b.Fatalf("%s: %d", page.path, w.Code)
			}
		})
	}
	users := events / 10
	n := 0
	g.answer = timed(200, func() {
		n++
		if _, err := h.Svc.View(ctx, fmt.Sprintf("00000000-0000-4000-8000-%012d", n*7919%users+1)); err != nil {
			b.Fatal(err)
		}
	})
	g.sizeBefore = databaseSize(b, d)
	res, err := retention.New(d, retention.Options{Window: 400 * 24 * time.Hour, Unresolved: 800 * 24 * time.Hour}).Pass(ctx, false)
	if err != nil {
		b.Fatal(err)
	}
	g.removed = res.Removed
	if _, err := d.ExecContext(ctx, "vacuum full provider_events"); err != nil {
		b.Fatal(err)
	}
	g.sizeAfter = databaseSize(b, d)
	return g
}

// timed is the mean time of n runs of fn.
func timed(n int, fn func()) time.Duration {
	start := time.Now()
	for range n {
		fn()
	}
	return time.Since(start) / time.Duration(n)
}

// ingestRate sends n web events, each a new subscription of a new user, one after
// another through the webhook handler, and gives the events a second.
func ingestRate(b *testing.B, h *billingtest.Harness, n int) float64 {
	fixture := billingtest.Fixture(b, "web/customer.subscription.updated.json")
	var run [4]byte
	rand.Read(run[:])
	tag := hex.EncodeToString(run[:])
	bodies := make([][]byte, n)
	for i := range bodies {
		body, err := stripe.ForUser(fixture, fmt.Sprintf("10000000-%s-4000-8000-%012d", tag[:4], i))
		if err != nil {
			b.Fatal(err)
		}
		bodies[i], err = stripe.MoveToNow(body, h.Clock())
		if err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	for _, body := range bodies {
		if rec := h.SendWeb(body); rec.Code != http.StatusOK {
			b.Fatalf("ingest: %d %s", rec.Code, rec.Body)
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

func databaseSize(b *testing.B, d *db.DB) int64 {
	var n int64
	if err := d.QueryRow(`select pg_database_size(current_database())`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

func printGrowth(b *testing.B, small, big growth) {
	var out strings.Builder
	fmt.Fprintf(&out, "\n| measure | %d events | %d events | ratio |\n|---|---|---|---|\n", small.events, big.events)
	fmt.Fprintf(&out, "| ingestion, events/s (one sender) | %.0f | %.0f | %.2f |\n", small.ingestPerSecond, big.ingestPerSecond, big.ingestPerSecond/small.ingestPerSecond)
	for _, p := range growthPages {
		fmt.Fprintf(&out, "| console %s, ms | %.1f | %.1f | %.2f |\n", p.name, ms(small.pages[p.name]), ms(big.pages[p.name]),
			float64(big.pages[p.name])/float64(small.pages[p.name]))
	}
	fmt.Fprintf(&out, "| counts worked out (in the background when slow), ms | %.1f | %.1f | %.2f |\n", ms(small.standing), ms(big.standing),
		float64(big.standing)/float64(small.standing))
	fmt.Fprintf(&out, "| a user's answer read anew, µs | %d | %d | %.2f |\n", small.answer.Microseconds(), big.answer.Microseconds(),
		float64(big.answer)/float64(small.answer))
	fmt.Fprintf(&out, "| database, MB, before retention | %d | %d | |\n", small.sizeBefore>>20, big.sizeBefore>>20)
	fmt.Fprintf(&out, "| events removed (400-day window) | %d | %d | |\n", small.removed, big.removed)
	fmt.Fprintf(&out, "| database, MB, after it and VACUUM FULL | %d | %d | |\n", small.sizeAfter>>20, big.sizeAfter>>20)
	fmt.Fprint(io.Writer(os.Stdout), out.String())
	b.ReportMetric(big.ingestPerSecond/small.ingestPerSecond, "ingest-ratio")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// growthDB is a fresh copy of the template database of events stored events, seeded the
// first time; it is dropped when the benchmark ends. Postgres only.
func growthDB(b *testing.B, events int) *db.DB {
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		if os.Getenv("CI") != "" {
			b.Fatal("TEST_DATABASE_URL must be set in CI")
		}
		b.Skip("TEST_DATABASE_URL not set: the growth benchmark runs on Postgres")
	}
	ctx := context.Background()
	admin, err := sql.Open("pgx", base)
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	template := fmt.Sprintf("tollgate_growth_%d_v1", events)
	var ready bool
	if err := admin.QueryRowContext(ctx, `select exists (select 1 from pg_database where datname = $1)`, template).Scan(&ready); err != nil {
		b.Fatal(err)
	}
	if ready {
		ready = seeded(b, databaseURL(b, base, template))
	}
	if !ready {
		start := time.Now()
		mustExec(b, admin, "drop database if exists "+template+" with (force)")
		mustExec(b, admin, "create database "+template)
		seedTemplate(b, databaseURL(b, base, template), events)
		b.Logf("seeded %s in %v", template, time.Since(start).Round(time.Second))
	}
	var id [4]byte
	rand.Read(id[:])
	run := template + "_run_" + hex.EncodeToString(id[:])
	mustExec(b, admin, "create database "+run+" template "+template)
	b.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err == nil {
			admin.Exec("drop database if exists " + run + " with (force)")
			admin.Close()
		}
	})
	d, err := db.Open(ctx, databaseURL(b, base, run), 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	return d
}

func databaseURL(b *testing.B, base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		b.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func mustExec(b *testing.B, d *sql.DB, statement string) {
	if _, err := d.Exec(statement); err != nil {
		b.Fatalf("%s: %v", statement, err)
	}
}

// seeded says whether the template at url was seeded to the end.
func seeded(b *testing.B, url string) bool {
	d, err := sql.Open("pgx", url)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	var done bool
	err = d.QueryRow(`select exists (select 1 from pg_tables where tablename = 'growth_seeded')`).Scan(&done)
	return err == nil && done
}

// seedTemplate migrates the database at url and stores events events over the last two
// years and a tenth as many users, each with a subscription, by bulk SQL; a tenth of the
// payloads are of a real web event's size (3 KB), the rest 300 bytes.
func seedTemplate(b *testing.B, url string, events int) {
	ctx := context.Background()
	d, err := db.Open(ctx, url, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	users := events / 10
	now := time.Now().UTC()
	list, err := plans.LoadPlans("../../config/plans.yml")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := plans.Sync(ctx, d, list, now); err != nil {
		b.Fatal(err)
	}
	user := "'00000000-0000-4000-8000-' || lpad(n::text, 12, '0')"
	for _, step := range []struct {
		sql  string
		args []any
	}{
		{`insert into billing_customers (user_id, created_at, updated_at) select ` + user + `, $1, $1 from generate_series(1, $2::int) n`, []any{now, users}},
		{`insert into known_users (user_id, email, first_seen, last_seen) select ` + user + `, 'user' || n || '@example.test', $1, $1
			from generate_series(1, $2::int) n`, []any{now, users}},
		// Each subscription's newest event is its last: event n belongs to subscription (n - 1) % users + 1.
		{`insert into provider_subscriptions (provider, provider_subscription_id, provider_customer_id, state, last_event_id, amount, currency, billing_period, created_at, updated_at)
			select 'web', 'sub_' || n, 'cus_' || n, '{}', 'evt_' || (n + $2::int * 9), 999, 'usd', 'P1M', $1, $1 from generate_series(1, $2::int) n`, []any{now, users}},
		{`insert into subscriptions (provider_subscription_id, billing_customer_id, plan_id, provider, status, current_period_end, created_at, updated_at)
			select ps.id, c.id, (select id from plans where key = 'pro'), 'web', case when ps.id % 10 = 0 then 'expired' else 'active' end, $2, $1, $1
			from provider_subscriptions ps join billing_customers c on c.id = ps.id`, []any{now, now.AddDate(0, 1, 0)}},
		// Received over the two years before now, a tenth of the payloads 3 KB, one in 50 unresolved.
		{`insert into provider_events (provider, provider_event_id, event_type, payload, received_at, processed_at, created_at, updated_at,
			outcome, user_id, subscription_id, plan_after, status_after)
			select 'web', 'evt_' || n, 'customer.subscription.updated',
				jsonb_build_object('id', 'evt_' || n, 'pad', (select string_agg(md5((n * 100 + k)::text), '') from generate_series(1, case when n % 10 = 0 then 94 else 9 end) k)),
				$1::timestamptz - ((($3::bigint - n) * 63072000) / $3::bigint) * interval '1 second', $1, $1, $1,
				case when n % 50 = 0 then 'unresolved' else 'applied' end,
				'00000000-0000-4000-8000-' || lpad(((n - 1) % $2::int + 1)::text, 12, '0'), 'sub_' || ((n - 1) % $2::int + 1), 'pro', 'active'
			from generate_series(1, $3::int) n`, []any{now, users, events}},
		{`create table growth_seeded (at timestamptz)`, nil},
	} {
		if _, err := d.ExecContext(ctx, step.sql, step.args...); err != nil {
			b.Fatalf("seed: %v\n%s", err, step.sql)
		}
	}
	if _, err := d.ExecContext(ctx, "vacuum analyze"); err != nil {
		b.Fatal(err)
	}
}
