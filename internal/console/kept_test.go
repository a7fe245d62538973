package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// subscribe gives user number n an active pro subscription ending in a month.
func subscribe(t *testing.T, d *db.DB, n string, now time.Time) {
	t.Helper()
	ctx := context.Background()
	user := "00000000-0000-4000-8000-00000000000" + n
	for _, q := range []string{
		`insert into billing_customers (user_id, created_at, updated_at) values ('` + user + `', $1, $1)`,
		`insert into provider_subscriptions (provider, provider_subscription_id, state, created_at, updated_at) values ('web', 'sub_` + n + `', '{}', $1, $1)`,
		`insert into subscriptions (provider_subscription_id, billing_customer_id, plan_id, provider, status, current_period_end, created_at, updated_at)
			select ps.id, c.id, (select id from plans where key = 'pro'), 'web', 'active', $2, $1, $1
			from provider_subscriptions ps, billing_customers c where ps.provider_subscription_id = 'sub_` + n + `' and c.user_id = '` + user + `'`,
	} {
		args := []any{now}
		if strings.Contains(q, "$2") {
			args = append(args, now.AddDate(0, 1, 0))
		}
		if _, err := d.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
}

var totalActive = regexp.MustCompile(`id="total-active">(\d+)<`)

// overviewOf is the overview's count of people subscribed, and whether it says the counts
// were kept from before.
func overviewOf(t *testing.T, c *Console) (total string, kept bool) {
	t.Helper()
	w := httptest.NewRecorder()
	c.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/admin", nil))
	m := totalActive.FindStringSubmatch(w.Body.String())
	if w.Code != http.StatusOK || m == nil {
		t.Fatalf("/admin: %d\n%s", w.Code, w.Body)
	}
	return m[1], strings.Contains(w.Body.String(), `id="counts-kept"`)
}

// TestSlowCountsAreKept: while working the counts out is quick, every view works them out
// and shows a new subscriber at once; once it is slow, views show the counts kept, saying
// so, until they are standingMaxAge old.
func TestSlowCountsAreKept(t *testing.T) {
	d := dbtest.SQLite(t)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	cfg, err := plans.LoadPlans("../../config/plans.yml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plans.Sync(context.Background(), d, cfg, now); err != nil {
		t.Fatal(err)
	}
	clock := now
	c := consoleOver(t, d, func() time.Time { return clock })
	subscribe(t, d, "1", now)
	if total, kept := overviewOf(t, c); total != "1" || kept {
		t.Fatalf("first view: %s subscribed, kept %v; want 1, worked out now", total, kept)
	}
	subscribe(t, d, "2", now)
	if total, kept := overviewOf(t, c); total != "2" || kept {
		t.Fatalf("quick counts after a new subscriber: %s, kept %v; want 2, worked out now", total, kept)
	}

	c.kept.slowAfter, c.kept.bigFrom = 0, 0 // from here on, working the counts out counts as slow
	subscribe(t, d, "3", now)
	if total, kept := overviewOf(t, c); total != "2" || !kept {
		t.Fatalf("slow counts, a new subscriber: %s, kept %v; want the kept 2, said to be kept", total, kept)
	}
	clock = clock.Add(standingMaxAge - time.Second)
	if total, _ := overviewOf(t, c); total != "2" {
		t.Fatalf("slow counts just under standingMaxAge old: %s, want the kept 2", total)
	}
	clock = clock.Add(time.Second)
	if total, kept := overviewOf(t, c); total != "3" || kept {
		t.Fatalf("slow counts standingMaxAge old: %s, kept %v; want 3, worked out now", total, kept)
	}
}
