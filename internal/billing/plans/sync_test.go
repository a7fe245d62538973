package plans_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

func TestSyncPlans(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d) // syncs billingtest.PlansYAML once
		ctx := context.Background()
		list, _ := plans.ParsePlans([]byte(billingtest.PlansYAML))
		changes, err := h.Svc.SyncPlans(ctx, list)
		if err != nil || len(changes) != 0 {
			t.Fatalf("second sync changed %v (%v), want nothing", changes, err)
		}

		// Drop "free", rename "pro", move a price and the default to a new top tier.
		next, err := plans.ParsePlans([]byte(`
plans:
  pro:
    name: Professional
    entitlements:
      - {name: projects, value: 20}
    web_prices: [price_1TESTmonthlyPro000001]
    mobile_products: [com.example.app.pro.monthly, pro_subscription, {id: pro_pass, lasts: 7d}]
  team:
    name: Team
    default: true
    entitlements:
      - {name: seats, value: 5}
    web_prices: [price_old_shape]
`))
		if err != nil {
			t.Fatal(err)
		}
		changes, err = h.Svc.SyncPlans(ctx, next)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(changes, "\n")
		for _, want := range []string{"plan pro: updated", "plan pro: entitlements set", "plan team: created", "plan free: archived", "web price price_old_shape: mapped to plan team",
			"mobile price pro_pass: lasts 7d", "mobile price pro_nonrenewing_undated: unmapped"} {
			if !strings.Contains(got, want) {
				t.Errorf("changes lack %q:\n%s", want, got)
			}
		}
		var archived, total int
		d.QueryRow("select count(*) from plans where archived_at is not null").Scan(&archived)
		d.QueryRow("select count(*) from plans").Scan(&total)
		if archived != 1 || total != 3 {
			t.Fatalf("%d archived of %d plans, want 1 of 3 (archive, never delete)", archived, total)
		}
		if changes, _ := h.Svc.SyncPlans(ctx, next); len(changes) != 0 {
			t.Fatalf("sync of an unchanged file changed %v", changes)
		}
		e, err := h.Svc.Entitlements(ctx, "33333333-4444-5555-6666-777777777777")
		if err != nil || e.Plan() == nil || e.Plan().Key != "team" || !e.Entitled("seats") || e.Entitled("projects") {
			t.Fatalf("default plan after the move: %+v %v", e.Plan(), err)
		}
	})
}

// A plan's web prices keep the plans file's order: a checkout without a price takes the
// first, and reordering them is a change that plans sync reports.
func TestSyncPlansKeepsThePriceOrder(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		ctx := context.Background()
		sync := func(prices string) []string {
			list, err := plans.ParsePlans([]byte("plans:\n  pro:\n    web_prices: [" + prices + "]\n"))
			if err != nil {
				t.Fatal(err)
			}
			changes, err := h.Svc.SyncPlans(ctx, list)
			if err != nil {
				t.Fatal(err)
			}
			return changes
		}
		order := func() string {
			rows, err := dbq.New(d).PlanWebPrices(ctx, "pro")
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range rows {
				ids = append(ids, r.PriceID.String)
			}
			return strings.Join(ids, ",")
		}
		sync("price_yearly, price_monthly")
		if got := order(); got != "price_yearly,price_monthly" {
			t.Fatalf("order %s", got)
		}
		changes := sync("price_monthly, price_yearly")
		if got := order(); got != "price_monthly,price_yearly" || strings.Join(changes, "; ") != "web price price_monthly: moved to place 1 of plan pro; web price price_yearly: moved to place 2 of plan pro" {
			t.Fatalf("order %s after %q", got, changes)
		}
		if changes := sync("price_monthly, price_yearly"); len(changes) != 0 {
			t.Fatalf("the same order again changed %q", changes)
		}
	})
}
