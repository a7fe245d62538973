package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/webhooks"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

func TestEveryArrivalOrderEndsInTheSameState(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		periodEnd := time.Unix(1793534400, 0).UTC()
		endedAt := time.Unix(billingtest.WebCreated+10*86400, 0).UTC()
		sets := []struct {
			events []string
			want   billingtest.CanonicalRow
		}{
			{[]string{"created", "updated", "invoice", "deleted"}, billingtest.CanonicalRow{Status: billing.StatusExpired, PeriodEnd: &endedAt, Plan: "pro", UserID: billingtest.FixtureUser}},
			{[]string{"created", "updated", "invoice"}, billingtest.CanonicalRow{Status: billing.StatusActive, PeriodEnd: &periodEnd, Plan: "pro", UserID: billingtest.FixtureUser}},
			{[]string{"created", "updated"}, billingtest.CanonicalRow{Status: billing.StatusActive, PeriodEnd: &periodEnd, Plan: "pro", UserID: billingtest.FixtureUser}},
			{[]string{"created", "invoice"}, billingtest.CanonicalRow{Status: billing.StatusActive, PeriodEnd: &periodEnd, Plan: "pro", UserID: billingtest.FixtureUser}},
		}
		for si, set := range sets {
			for pi, order := range billingtest.Permutations(set.events) {
				sub := fmt.Sprintf("sub_perm_%d_%d", si, pi)
				events := billingtest.WebLifecycle(t, sub)
				for _, name := range order {
					h.MustSend(billing.ProviderWeb, events[name])
				}
				// Every event again, as providers redeliver: nothing may change.
				for _, name := range order {
					h.MustSend(billing.ProviderWeb, events[name])
				}
				got := h.Canonical(billing.ProviderWeb, sub)
				if got == nil || got.Status != set.want.Status || !got.PeriodEnd.Equal(*set.want.PeriodEnd) ||
					got.Plan != set.want.Plan || got.UserID != set.want.UserID {
					t.Fatalf("order %v: got %+v, want %+v (period end %v)", order, got, set.want, *set.want.PeriodEnd)
				}
			}
		}
	})
}

func TestOlderEventNeverRegressesANewerOne(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		update := func(id string, created int64, status, previous string) []byte {
			return billingtest.Edit(t, billingtest.Fixture(t, "web/customer.subscription.updated.json"), func(m map[string]any) {
				m["id"], m["created"] = id, float64(created)
				billingtest.Path(m, "data", "object")["status"] = status
				billingtest.Path(m, "data")["previous_attributes"] = map[string]any{"status": previous}
			})
		}
		newer := update("evt_newer", billingtest.WebCreated+100, "past_due", "active")
		older := update("evt_older", billingtest.WebCreated+50, "active", "incomplete")
		h.MustSend(billing.ProviderWeb, newer)
		h.MustSend(billing.ProviderWeb, older)
		if got := h.Canonical(billing.ProviderWeb, "sub_1TESTa1B2c3D4e5F6g7H8i9"); got == nil || got.Status != billing.StatusPastDue {
			t.Fatalf("older active event regressed the newer past_due: %+v", got)
		}

		// Mobile: a renewal older than the expiry must not revive the subscription.
		started := billingtest.Fixture(t, "mobile/subscription_started.json")
		expired := billingtest.Edit(t, started, func(m map[string]any) {
			m["event_type"], m["event_datetime"] = "subscription_expired", "2026-11-01T12:00:02.000000+0000"
		})
		h.MustSend(billing.ProviderMobile, expired)
		h.MustSend(billing.ProviderMobile, started)
		if got := h.Canonical(billing.ProviderMobile, "2000000987654321"); got == nil || got.Status != billing.StatusExpired {
			t.Fatalf("older mobile start revived an expired subscription: %+v", got)
		}
	})
}

// toOldShape rewrites a web event into the pre-2025-03-31 API shape: period end on the
// subscription, the subscription id directly on the invoice, prices on invoice lines.
func toOldShape(t *testing.T, body []byte) []byte {
	return billingtest.Edit(t, body, func(m map[string]any) {
		obj := billingtest.Path(m, "data", "object")
		switch obj["object"] {
		case "subscription":
			items := billingtest.Path(obj, "items")["data"].([]any)
			for _, it := range items {
				item := it.(map[string]any)
				obj["current_period_end"] = item["current_period_end"]
				delete(item, "current_period_end")
				delete(item, "current_period_start")
			}
		case "invoice":
			obj["subscription"] = billingtest.Path(obj, "parent", "subscription_details")["subscription"]
			delete(obj, "parent")
			for _, l := range billingtest.Path(obj, "lines")["data"].([]any) {
				line := l.(map[string]any)
				line["price"] = map[string]any{"id": billingtest.Path(line, "pricing", "price_details")["price"]}
				delete(line, "pricing")
			}
		}
	})
}

func TestBothWebAPIShapesGiveTheSameRow(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		newShape := billingtest.WebLifecycle(t, "sub_new_shape")
		oldShape := billingtest.WebLifecycle(t, "sub_old_shape")
		for _, name := range []string{"created", "updated", "invoice"} {
			h.MustSend(billing.ProviderWeb, newShape[name])
			old := toOldShape(t, oldShape[name])
			if strings.Contains(string(old), "subscription_details") || (name != "invoice" && strings.Count(string(old), "current_period_end") != 1) {
				t.Fatalf("%s was not rewritten to the old shape", name)
			}
			h.MustSend(billing.ProviderWeb, old)
		}
		a, b := h.Canonical(billing.ProviderWeb, "sub_new_shape"), h.Canonical(billing.ProviderWeb, "sub_old_shape")
		if a == nil || b == nil || a.Status != b.Status || !a.PeriodEnd.Equal(*b.PeriodEnd) || a.Plan != b.Plan || a.UserID != b.UserID {
			t.Fatalf("new shape %+v, old shape %+v", a, b)
		}
		if a.Status != billing.StatusActive || a.PeriodEnd.Unix() != 1793534400 {
			t.Fatalf("unexpected canonical row %+v", a)
		}
	})
}

func TestWebAndMobileSalesAnswerAlike(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		const mobileUser = "0b6d7e2a-1c3f-4a5b-9c8d-7e6f5a4b3c2d"
		const nobody = "11111111-2222-3333-4444-555555555555"
		for _, name := range []string{"created", "updated", "invoice"} {
			h.MustSend(billing.ProviderWeb, billingtest.WebLifecycle(t, "sub_web_sale")[name])
		}
		h.MustSend(billing.ProviderMobile, billingtest.Edit(t, billingtest.Fixture(t, "mobile/subscription_started.json"), func(m map[string]any) {
			m["customer_user_id"] = mobileUser
		}))
		ctx := context.Background()
		web, err := h.Svc.Entitlements(ctx, billingtest.FixtureUser)
		if err != nil {
			t.Fatal(err)
		}
		mobile, err := h.Svc.Entitlements(ctx, mobileUser)
		if err != nil {
			t.Fatal(err)
		}
		none, err := h.Svc.Entitlements(ctx, nobody)
		if err != nil {
			t.Fatal(err)
		}
		answers := func(e billing.Entitlements) string {
			limit, hasLimit := e.Limit("projects")
			plan := "<none>"
			if e.Plan() != nil {
				plan = e.Plan().Key
			}
			return fmt.Sprintf("subscribed=%v plan=%s exports=%v projects=%v limit=%d/%v unknown=%v",
				e.Subscribed(), plan, e.Entitled("exports"), e.Entitled("projects"), limit, hasLimit, e.Entitled("unknown"))
		}
		want := "subscribed=true plan=pro exports=true projects=true limit=10/true unknown=false"
		if got := answers(web); got != want {
			t.Fatalf("web-sold: %s, want %s", got, want)
		}
		if got := answers(mobile); got != want {
			t.Fatalf("mobile-sold: %s, want %s", got, want)
		}
		if got := answers(none); got != "subscribed=false plan=free exports=false projects=true limit=1/true unknown=false" {
			t.Fatalf("no subscription: %s", got)
		}

		// After the period both lapse the same way.
		h.SetNow(time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC))
		web, _ = h.Svc.Entitlements(ctx, billingtest.FixtureUser)
		mobile, _ = h.Svc.Entitlements(ctx, mobileUser)
		if answers(web) != answers(mobile) || web.Subscribed() {
			t.Fatalf("after the period: web %s, mobile %s", answers(web), answers(mobile))
		}
	})
}

func TestUnresolvedEventsChangeNothingUntilReplayed(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		ctx := context.Background()
		const newUser = "0b7e7a52-6f2b-4c55-9a3e-2d1f0c9e8b7a"
		// A resolved subscription from each store, so that there are rows to leave alone.
		h.MustSend(billing.ProviderWeb, billingtest.Fixture(t, "web/customer.subscription.updated.json"))
		h.MustSend(billing.ProviderMobile, billingtest.Fixture(t, "mobile/subscription_started.json"))

		webSub := func(eventID, subID string, fn func(obj map[string]any)) []byte {
			return billingtest.Edit(t, billingtest.Fixture(t, "web/customer.subscription.updated.json"), func(m map[string]any) {
				m["id"] = eventID
				obj := billingtest.Path(m, "data", "object")
				obj["id"] = subID
				fn(obj)
			})
		}
		setPrice := func(obj map[string]any, price string) {
			billingtest.Path(obj["items"].(map[string]any)["data"].([]any)[0].(map[string]any), "price")["id"] = price
		}
		mobile := func(eventID, transaction string, fn func(m map[string]any)) []byte {
			return billingtest.Edit(t, billingtest.Fixture(t, "mobile/subscription_started.json"), func(m map[string]any) {
				m["event_id"] = eventID
				billingtest.Path(m, "event_properties")["original_transaction_id"] = transaction
				fn(m)
			})
		}
		unresolvedEvents := []struct {
			provider string
			body     []byte
			loggedID string // the unresolved id its one info line names
		}{
			{billing.ProviderWeb, webSub("evt_unknown_customer", "sub_unknown_customer", func(obj map[string]any) {
				obj["customer"], obj["metadata"] = "cus_nobody", map[string]any{}
			}), "cus_nobody"},
			{billing.ProviderWeb, webSub("evt_unmapped_price", "sub_unmapped_price", func(obj map[string]any) {
				// The metadata names a user: today's link and customer row must not appear.
				obj["customer"], obj["metadata"] = "cus_new_user", map[string]any{"user_id": newUser}
				setPrice(obj, "price_team_monthly")
			}), "price_team_monthly"},
			{billing.ProviderWeb, billingtest.Edit(t, billingtest.Fixture(t, "web/customer.subscription.updated.json"), func(m map[string]any) {
				// A newer change of the resolved subscription to a price no plan sells.
				m["id"], m["created"] = "evt_upgrade_unmapped", float64(billingtest.WebCreated+60)
				setPrice(billingtest.Path(m, "data", "object"), "price_team_yearly")
			}), "price_team_yearly"},
			{billing.ProviderWeb, billingtest.Edit(t, billingtest.Fixture(t, "web/invoice.payment_succeeded.json"), func(m map[string]any) {
				m["id"] = "evt_invoice_unknown_customer"
				obj := billingtest.Path(m, "data", "object")
				obj["customer"] = "cus_invoice_nobody"
				billingtest.Path(obj, "parent", "subscription_details")["subscription"] = "sub_invoice_only"
				billingtest.Path(obj, "parent", "subscription_details")["metadata"] = map[string]any{}
				obj["lines"].(map[string]any)["data"].([]any)[0].(map[string]any)["metadata"] = map[string]any{}
			}), "cus_invoice_nobody"},
			{billing.ProviderMobile, mobile("mobile_unmapped_product", "txn_unmapped", func(m map[string]any) {
				billingtest.Path(m, "event_properties")["vendor_product_id"] = "com.example.app.team.monthly"
			}), "com.example.app.team.monthly"},
			{billing.ProviderMobile, mobile("mobile_no_user", "txn_no_user", func(m map[string]any) { m["customer_user_id"] = nil }), "unresolved mobile customer"},
		}

		before := h.DumpTables("billing_customers", "provider_subscriptions", "subscriptions")
		for _, ev := range unresolvedEvents {
			answer := h.MustSend(ev.provider, ev.body)
			if answer.Get(webhooks.HeaderOutcome) != billing.OutcomeUnresolved || !strings.Contains(answer.Get(webhooks.HeaderReason), ev.loggedID) || answer.Get(webhooks.HeaderUserID) != "" {
				t.Errorf("unresolved %s answered with outcome %q, reason %q, user %q", ev.loggedID, answer.Get(webhooks.HeaderOutcome), answer.Get(webhooks.HeaderReason), answer.Get(webhooks.HeaderUserID))
			}
		}
		if after := h.DumpTables("billing_customers", "provider_subscriptions", "subscriptions"); after != before {
			t.Fatalf("unresolved events changed canonical rows:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		logs := h.Logs.String()
		for _, ev := range unresolvedEvents {
			lines := 0
			for _, line := range strings.Split(logs, "\n") {
				if strings.Contains(line, ev.loggedID) {
					lines++
					if !strings.Contains(line, "level=INFO") {
						t.Errorf("unresolved %s logged as %q", ev.loggedID, line)
					}
				}
			}
			if lines != 1 {
				t.Errorf("%d log lines name %s, want 1", lines, ev.loggedID)
			}
		}

		// Fix the causes: a plan selling the new price and product, a link for cus_nobody.
		plans, err := plans.ParsePlans([]byte(billingtest.PlansYAML + `  team:
    name: Team
    entitlements:
      - {name: projects, value: 50}
    web_prices: [price_team_monthly, price_team_yearly]
    mobile_products: [com.example.app.team.monthly]
`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Svc.SyncPlans(ctx, plans); err != nil {
			t.Fatal(err)
		}
		const linkedUser = "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"
		if _, err := d.Exec("insert into billing_customers (user_id, web_customer_id, created_at, updated_at) values ($1, $2, $3, $3)",
			linkedUser, "cus_nobody", billingtest.Now); err != nil {
			t.Fatal(err)
		}
		outcomes := map[string]string{}
		if _, err := h.Svc.Replay(ctx, pipeline.ReplayFilter{Unprocessed: true}, func(_, id, outcome string) { outcomes[id] = outcome }); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"evt_unknown_customer": billing.OutcomeApplied, "evt_unmapped_price": billing.OutcomeApplied, "evt_upgrade_unmapped": billing.OutcomeApplied,
			"evt_invoice_unknown_customer": billing.OutcomeUnresolved, // its customer is still unknown
			"mobile_unmapped_product":      billing.OutcomeApplied, "mobile_no_user": billing.OutcomeUnresolved,
		}
		if fmt.Sprint(outcomes) != fmt.Sprint(want) {
			t.Fatalf("replay outcomes %v, want %v", outcomes, want)
		}
		for sub, row := range map[string]billingtest.CanonicalRow{
			"sub_unknown_customer":        {Plan: "pro", UserID: linkedUser},
			"sub_unmapped_price":          {Plan: "team", UserID: newUser},
			"sub_1TESTa1B2c3D4e5F6g7H8i9": {Plan: "team", UserID: billingtest.FixtureUser},
		} {
			if got := h.Canonical(billing.ProviderWeb, sub); got == nil || got.Plan != row.Plan || got.UserID != row.UserID || got.Status != billing.StatusActive {
				t.Errorf("%s after replay: %+v, want %+v", sub, got, row)
			}
		}
		if got := h.Canonical(billing.ProviderMobile, "txn_unmapped"); got == nil || got.Plan != "team" {
			t.Errorf("mobile subscription after replay: %+v", got)
		}
		if e := h.Event(t, billing.ProviderMobile, "mobile_no_user"); !strings.Contains(e.ProcessingError, "unresolved mobile customer") {
			t.Errorf("still unresolved event keeps its reason: %q", e.ProcessingError)
		}
	})
}

func TestPermanentErrorsAreStoredAndReplayable(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		ctx := context.Background()
		broken := []byte(`{"id":"evt_broken","type":"customer.subscription.updated","created":1790856000,"data":{"object":{"status":"active"}}}`)
		badTime := billingtest.Edit(t, billingtest.Fixture(t, "mobile/subscription_started.json"), func(m map[string]any) {
			m["event_id"], m["event_datetime"] = "mobile_bad_time", "yesterday"
		})
		h.MustSend(billing.ProviderWeb, broken)
		h.MustSend(billing.ProviderMobile, badTime)
		if e := h.Event(t, billing.ProviderWeb, "evt_broken"); !strings.Contains(e.ProcessingError, "no id") {
			t.Fatalf("web processing error %q", e.ProcessingError)
		}
		if e := h.Event(t, billing.ProviderMobile, "mobile_bad_time"); !strings.Contains(e.ProcessingError, "event_datetime") {
			t.Fatalf("mobile processing error %q", e.ProcessingError)
		}

		// An event unresolved for want of a plan is completed by a replay after plans sync.
		newPrice := billingtest.Edit(t, billingtest.WebLifecycle(t, "sub_later_plan")["updated"], func(m map[string]any) {
			item := billingtest.Path(m, "data", "object", "items")["data"].([]any)[0].(map[string]any)
			billingtest.Path(item, "price")["id"] = "price_added_later"
		})
		h.MustSend(billing.ProviderWeb, newPrice)
		if h.Canonical(billing.ProviderWeb, "sub_later_plan") != nil {
			t.Fatal("unmapped price produced a canonical row")
		}
		plans, err := plans.ParsePlans([]byte(strings.Replace(billingtest.PlansYAML, "price_old_shape]", "price_old_shape, price_added_later]", 1)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Svc.SyncPlans(ctx, plans); err != nil {
			t.Fatal(err)
		}
		var outcomes []string
		n, err := h.Svc.Replay(ctx, pipeline.ReplayFilter{Provider: billing.ProviderWeb}, func(_, id, outcome string) {
			outcomes = append(outcomes, id+"="+outcome)
		})
		if err != nil || n != 2 {
			t.Fatalf("replayed %d (%v), want 2: %v", n, err, outcomes)
		}
		if got := h.Canonical(billing.ProviderWeb, "sub_later_plan"); got == nil || got.Plan != "pro" || got.Status != billing.StatusActive {
			t.Fatalf("after replay: %+v", got)
		}
		// Replaying again changes nothing, and --unprocessed selects only the broken ones.
		n, err = h.Svc.Replay(ctx, pipeline.ReplayFilter{Unprocessed: true}, func(string, string, string) {})
		if err != nil || n != 2 {
			t.Fatalf("unprocessed replay selected %d (%v), want the 2 broken events", n, err)
		}
		n, _ = h.Svc.Replay(ctx, pipeline.ReplayFilter{EventID: "evt_broken", Since: billingtest.Now.Add(time.Hour)}, func(string, string, string) {})
		if n != 0 {
			t.Fatalf("--since after the event still selected %d", n)
		}
	})
}

// TestBillingChangeHook: the hook runs after commit for each event that changed a user's
// canonical billing, and not for a duplicate, a stale event or an unresolved one.
func TestBillingChangeHook(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		var mu sync.Mutex
		var calls []string
		h.Svc.OnBillingChange(func(ctx context.Context, userID string) {
			var n int // the change is committed: another connection sees it
			d.QueryRowContext(context.Background(), "select count(*) from subscriptions").Scan(&n)
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, fmt.Sprintf("%s:%d", userID, n))
		})
		called := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), calls...)
		}
		updated := billingtest.Fixture(t, "web/customer.subscription.updated.json")
		h.MustSend(billing.ProviderWeb, updated)
		h.MustSend(billing.ProviderWeb, updated)                                                          // duplicate
		h.MustSend(billing.ProviderWeb, billingtest.Fixture(t, "web/customer.subscription.created.json")) // stale
		h.MustSend(billing.ProviderWeb, billingtest.Edit(t, updated, func(m map[string]any) {
			m["id"], m["created"] = "evt_past_due", float64(billingtest.WebCreated+60)
			billingtest.Path(m, "data", "object")["status"] = "past_due"
		}))
		h.MustSend(billing.ProviderWeb, billingtest.Edit(t, updated, func(m map[string]any) { // unresolved
			m["id"], m["created"] = "evt_unmapped", float64(billingtest.WebCreated+120)
			billingtest.Path(billingtest.Path(m, "data", "object")["items"].(map[string]any)["data"].([]any)[0].(map[string]any), "price")["id"] = "price_nobody_sells"
		}))
		want := []string{billingtest.FixtureUser + ":1", billingtest.FixtureUser + ":1"}
		if got := called(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("hook calls %v, want %v", got, want)
		}
	})
}
