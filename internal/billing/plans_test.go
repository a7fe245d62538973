package billing

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

func TestParsePlansRejectsBadFiles(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"price under two plans", `
plans:
  a: {web_prices: [price_x]}
  b: {web_prices: [price_x]}`, `web price "price_x" is listed under both plan "a" and plan "b"`},
		{"product under two plans", `
plans:
  a: {mobile_products: [p1]}
  b: {mobile_products: [p1]}`, `mobile price "p1" is listed under both plan "a" and plan "b"`},
		{"two defaults", `
plans:
  a: {default: true}
  b: {default: true}`, "more than one plan is marked default: a, b"},
		{"unknown plan key", `
plans:
  free:
    name: Free
    entitlement:
      - {name: x, value: 1}`, `line 5: plan "free": unknown key "entitlement"`},
		{"unknown entitlement key", `
plans:
  free:
    entitlements:
      - name: x
        value: 1
        limit: 3`, `line 7: plan "free": unknown entitlement key "limit"`},
		{"unknown top-level key", `
plan:
  free: {}`, `line 2: unknown key "plan"`},
		{"entitlement without a value", `
plans:
  a: {entitlements: [{name: seats}]}`, `entitlement "seats": no value`},
		{"bad indentation", `
plans:
  free:
    name: Free
   default: true`, "line 5: did not find expected key"},
		{"tab indentation", "\nplans:\n  free:\n    name: Free\n\tdefault: true", "line 5: found a tab character"},
		{"unclosed list", `
plans:
  free:
    name: Free
    web_prices: [a, b
  pro:
    name: Pro`, "line 5: did not find expected ',' or ']'"},
		{"string value", `
plans:
  a: {entitlements: [{name: seats, value: lots}]}`, `entitlement "seats": want true, false or a whole number`},
		{"negative value", `
plans:
  a: {entitlements: [{name: seats, value: -1}]}`, "zero or more"},
		{"no plans mapping", `plans: [a, b]`, "want a \"plans:\" mapping"},
		{"duplicate entitlement", `
plans:
  a: {entitlements: [{name: x, value: 1}, {name: x, value: 2}]}`, `entitlement "x" is listed twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePlans([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestSyncPlans(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := newHarness(t, d) // syncs testPlansYAML once
		ctx := context.Background()
		plans, _ := ParsePlans([]byte(testPlansYAML))
		changes, err := h.svc.SyncPlans(ctx, plans)
		if err != nil || len(changes) != 0 {
			t.Fatalf("second sync changed %v (%v), want nothing", changes, err)
		}

		// Drop "free", rename "pro", move a price and the default to a new top tier.
		next, err := ParsePlans([]byte(`
plans:
  pro:
    name: Professional
    entitlements:
      - {name: projects, value: 20}
    web_prices: [price_1TESTmonthlyPro000001]
    mobile_products: [com.example.app.pro.monthly, pro_subscription]
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
		changes, err = h.svc.SyncPlans(ctx, next)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(changes, "\n")
		for _, want := range []string{"plan pro: updated", "plan pro: entitlements set", "plan team: created", "plan free: archived", "web price price_old_shape: mapped to plan team"} {
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
		if changes, _ := h.svc.SyncPlans(ctx, next); len(changes) != 0 {
			t.Fatalf("sync of an unchanged file changed %v", changes)
		}
		e, err := h.svc.Entitlements(ctx, "33333333-4444-5555-6666-777777777777")
		if err != nil || e.Plan() == nil || e.Plan().Key != "team" || !e.Entitled("seats") || e.Entitled("projects") {
			t.Fatalf("default plan after the move: %+v %v", e.Plan(), err)
		}
	})
}

// A plan's web prices keep the plans file's order: a checkout without a price takes the
// first, and reordering them is a change that plans sync reports.
func TestSyncPlansKeepsThePriceOrder(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := newHarness(t, d)
		ctx := context.Background()
		sync := func(prices string) []string {
			plans, err := ParsePlans([]byte("plans:\n  pro:\n    web_prices: [" + prices + "]\n"))
			if err != nil {
				t.Fatal(err)
			}
			changes, err := h.svc.SyncPlans(ctx, plans)
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

func TestWebCanonical(t *testing.T) {
	at := time.Unix(fixtureCreated, 0).UTC()
	end := int64(fixtureCreated + 30*86400)
	i64 := func(v int64) *int64 { return &v }
	sub := func(status string, fn func(s *webSubscription)) webSubscription {
		s := webSubscription{ID: "sub_1", Status: status, StartDate: fixtureCreated}
		s.Items.Data = append(s.Items.Data, webItem{CurrentPeriodEnd: i64(end)})
		if fn != nil {
			fn(&s)
		}
		return s
	}
	tests := []struct {
		name        string
		sub         webSubscription
		paidThrough *time.Time
		paidAt      *time.Time
		status      string
		horizon     *int64
	}{
		{"trialing", sub("trialing", func(s *webSubscription) { s.TrialEnd = i64(end - 100) }), nil, nil, StatusTrialing, i64(end - 100)},
		{"active", sub("active", nil), nil, nil, StatusActive, i64(end)},
		{"active cancelling at period end", sub("active", func(s *webSubscription) { s.CancelAtPeriodEnd = true }), nil, nil, StatusCancelled, i64(end)},
		{"active with cancel_at", sub("active", func(s *webSubscription) { s.CancelAt = i64(end - 5) }), nil, nil, StatusCancelled, i64(end - 5)},
		{"past_due", sub("past_due", nil), nil, nil, StatusPastDue, i64(end)},
		{"incomplete never entitles", sub("incomplete", nil), nil, nil, StatusPastDue, i64(fixtureCreated)},
		{"unpaid", sub("unpaid", nil), nil, nil, StatusExpired, i64(fixtureCreated)},
		{"paused", sub("paused", nil), nil, nil, StatusExpired, i64(fixtureCreated)},
		{"incomplete_expired", sub("incomplete_expired", nil), nil, nil, StatusExpired, i64(fixtureCreated)},
		{"canceled uses ended_at", sub("canceled", func(s *webSubscription) { s.EndedAt = i64(fixtureCreated + 7) }), nil, nil, StatusExpired, i64(fixtureCreated + 7)},
		{"old shape period end", sub("active", func(s *webSubscription) { s.Items.Data[0].CurrentPeriodEnd = nil; s.CurrentPeriodEnd = i64(end) }), nil, nil, StatusActive, i64(end)},
		{"paid invoice lifts past_due", sub("past_due", nil), unixTime(end + 1000), unixTime(fixtureCreated + 1), StatusActive, i64(end + 1000)},
		{"older invoice does not lift past_due", sub("past_due", nil), unixTime(end + 1000), unixTime(fixtureCreated - 1), StatusPastDue, i64(end + 1000)},
		{"invoice never revives expired", sub("canceled", func(s *webSubscription) { s.EndedAt = i64(fixtureCreated + 7) }), unixTime(end), unixTime(fixtureCreated + 9), StatusExpired, i64(fixtureCreated + 7)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, horizon, err := webCanonical(tc.sub, at, tc.paidThrough, tc.paidAt)
			if err != nil {
				t.Fatal(err)
			}
			if status != tc.status || (horizon == nil) != (tc.horizon == nil) || (horizon != nil && horizon.Unix() != *tc.horizon) {
				t.Fatalf("got %s %v, want %s %v", status, horizon, tc.status, unixPtr(tc.horizon))
			}
		})
	}
	if _, _, err := webCanonical(sub("mystery", nil), at, nil, nil); err == nil {
		t.Fatal("unknown status accepted")
	}
}

func TestMobileCanonical(t *testing.T) {
	at := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	expires := "2026-11-01T12:00:01.000000+0000"
	expiresAt, _ := parseMobileTime(expires)
	yes, no := true, false
	prior := mobileState{Status: StatusActive, PeriodEnd: &expiresAt}
	tests := []struct {
		event   string
		props   func(p *mobileEvent)
		status  string
		horizon *time.Time
	}{
		{"subscription_started", func(ev *mobileEvent) { ev.EventProperties.SubscriptionExpiresAt = expires }, StatusActive, &expiresAt},
		{"subscription_renewed", func(ev *mobileEvent) { ev.EventProperties.SubscriptionExpiresAt = expires }, StatusActive, &expiresAt},
		{"subscription_cancelled", nil, StatusCancelled, &expiresAt},
		{"subscription_expired", nil, StatusExpired, &at},
		{"subscription_refunded", nil, StatusRefunded, &at},
		{"non_subscription_purchase", func(ev *mobileEvent) { ev.EventProperties.IsLifetime = &yes }, StatusActive, nil},
		{"access_level_updated", func(ev *mobileEvent) { ev.EventProperties.IsRefund = &yes; ev.EventProperties.ExpiresAt = expires }, StatusRefunded, &expiresAt},
		{"access_level_updated", func(ev *mobileEvent) { ev.EventProperties.IsActive = &no }, StatusExpired, &at},
		{"access_level_updated", func(ev *mobileEvent) {
			ev.EventProperties.IsInGracePeriod = &yes
			ev.EventProperties.ExpiresAt = expires
		}, StatusPastDue, &expiresAt},
		{"access_level_updated", func(ev *mobileEvent) { ev.EventProperties.WillRenew = &no; ev.EventProperties.ExpiresAt = expires }, StatusCancelled, &expiresAt},
		{"access_level_updated", func(ev *mobileEvent) { ev.EventProperties.IsActive = &yes; ev.EventProperties.ExpiresAt = expires }, StatusActive, &expiresAt},
	}
	for i, tc := range tests {
		var ev mobileEvent
		if tc.props != nil {
			tc.props(&ev)
		}
		got, err := mobileCanonical(tc.event, ev, at, prior)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != tc.status || (got.PeriodEnd == nil) != (tc.horizon == nil) || (got.PeriodEnd != nil && !got.PeriodEnd.Equal(*tc.horizon)) {
			t.Errorf("%d %s: got %s %v, want %s %v", i, tc.event, got.Status, got.PeriodEnd, tc.status, tc.horizon)
		}
	}
}
