package console

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/grant"
	"github.com/tollgate/tollgate/internal/billing/grants"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/identity"
)

// Sizes of the benchmark's history: 100k stored events over 90 days, 10k users each with
// a subscription.
const (
	benchUsers  = 10_000
	benchEvents = 100_000
)

// seedHistory writes the history by bulk SQL: a recursive series works on both engines.
func seedHistory(b *testing.B, d *db.DB) {
	ctx := context.Background()
	cfg, err := plans.LoadPlans("../../config/plans.yml")
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	if _, err := plans.Sync(ctx, d, cfg, now); err != nil {
		b.Fatal(err)
	}
	// userOf is the SQL for the id of user number n (an SQL expression).
	userOf := func(n string) string {
		if d.Engine == db.Postgres {
			return "'00000000-0000-4000-8000-' || lpad(CAST(" + n + " AS text), 12, '0')"
		}
		return "'00000000-0000-4000-8000-' || substr('000000000000' || " + n + ", -12, 12)"
	}
	user := userOf("n")
	// receivedAt spreads event n over the 90 days before $1, a minute and a bit apart.
	receivedAt := "datetime($1, '-' || (n * 77 % 129600) || ' minutes')"
	if d.Engine == db.Postgres {
		receivedAt = "CAST($1 AS timestamptz) - (n * 77 % 129600) * interval '1 minute'"
	}
	series := func(limit int, body string) string {
		return fmt.Sprintf("with recursive s(n) as (select 1 union all select n + 1 from s where n < %d) %s", limit, body)
	}
	for _, q := range []string{
		series(benchUsers, `insert into billing_customers (user_id, created_at, updated_at) select `+user+`, $1, $1 from s`),
		series(benchUsers, `insert into known_users (user_id, email, first_seen, last_seen) select `+user+`, 'user' || n || '@example.test', $1, $1 from s`),
		series(benchUsers, `insert into provider_subscriptions (provider, provider_subscription_id, provider_customer_id, state, amount, currency, billing_period, created_at, updated_at)
			select case when n % 3 = 0 then 'mobile' else 'web' end, 'sub_' || n, 'cus_' || n, '{}', 999, case when n % 2 = 0 then 'usd' else 'eur' end, 'P1M', $1, $1 from s`),
		`insert into subscriptions (provider_subscription_id, billing_customer_id, plan_id, provider, status, current_period_end, created_at, updated_at)
			select ps.id, c.id, (select id from plans where key = 'pro'), ps.provider, case when ps.id % 10 = 0 then 'expired' else 'active' end, $2, $1, $1
			from provider_subscriptions ps join billing_customers c on c.id = ps.id`,
		series(benchEvents, `insert into provider_events (provider, provider_event_id, event_type, payload, received_at, processed_at, created_at, updated_at,
			outcome, user_id, subscription_id, plan_after, status_after)
			select 'web', 'evt_' || n, 'customer.subscription.updated', '{"id":"evt"}', `+receivedAt+`, $1, $1, $1,
			case when n % 50 = 0 then 'unresolved' else 'applied' end, `+userOf("(n % 10000 + 1)")+`, 'sub_' || (n % 10000 + 1), 'pro', 'active' from s`),
	} {
		args := []any{now, now.AddDate(0, 1, 0)}
		for strings.Count(q, fmt.Sprintf("$%d", len(args))) == 0 { // Postgres wants exactly the parameters used
			args = args[:len(args)-1]
		}
		if _, err := d.ExecContext(ctx, q, args...); err != nil {
			b.Fatalf("seed: %v\n%s", err, q)
		}
	}
}

// consoleOver is a console over d, every request by an operator, on clock (nil: the
// system's).
func consoleOver(tb testing.TB, d *db.DB, clock func() time.Time) *Console {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	catalogues := &plans.Catalogues{}
	confirmed := time.Now()
	operator := &identity.User{Email: "ops@example.test", EmailConfirmedAt: &confirmed}
	p := pipeline.New(d, log, pipeline.Options{Catalogues: catalogues, Adapters: []billing.Adapter{grant.New()}})
	c, err := New(Options{
		DB: d, Operators: []string{"ops@example.test"}, Log: log, NotFound: http.NotFound, Clock: clock,
		CurrentUser: func(context.Context) (*identity.User, error) { return operator, nil },
		Billing:     reader.New(d, log, reader.Options{Catalogues: catalogues}),
		Pipeline:    p, Grants: grants.New(d, p, log, nil),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// BenchmarkConsolePages serves each console page from a history of 100k events and 10k
// users through the console's handler tree, against a bare net/http handler as the
// baseline; it reports each page's time in ms (the target: under 300 ms).
func BenchmarkConsolePages(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			var d *db.DB
			if engine == "sqlite" {
				d = dbtest.SQLite(b)
			} else {
				d = dbtest.Postgres(b)
			}
			seedHistory(b, d)
			h := consoleOver(b, d, nil).Handler()
			bare := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "<html></html>") })
			for _, page := range []struct{ name, path string }{
				{"bare", ""}, {"overview", "/admin"}, {"customers", "/admin/customers?q=user77@"}, {"search-id", "/admin/customers?q=cus_77"},
				{"customers-seen-last", "/admin/customers"}, {"search-prefix", "/admin/customers?q=user77"},
				{"customer", "/admin/customers/00000000-0000-4000-8000-000000000077"}, {"events", "/admin/events"},
				{"events-page-100", "/admin/events?page=100"}, {"events-unresolved", "/admin/events?outcome=unresolved"},
				{"deliveries", "/admin/deliveries"}, {"plans", "/admin/plans"},
			} {
				b.Run(page.name, func(b *testing.B) {
					handler := http.Handler(h)
					if page.path == "" {
						handler, page.path = bare, "/"
					}
					for b.Loop() {
						w := httptest.NewRecorder()
						handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, page.path, nil))
						if w.Code != http.StatusOK {
							b.Fatalf("%s: %d\n%s", page.path, w.Code, w.Body)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/page")
				})
			}
		})
	}
}
