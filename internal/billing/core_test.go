package billing_test

import (
	"fmt"
	"math"
	"regexp"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

var (
	now  = time.Date(2026, 10, 15, 12, 0, 0, 0, time.UTC)
	free = billing.Plan{Key: "free", Name: "Free", ID: 1, Tier: 0}
	pro  = billing.Plan{Key: "pro", Name: "Pro", ID: 2, Tier: 1}
	team = billing.Plan{Key: "team", Name: "Team", ID: 3, Tier: 2}
)

func catalogue(withDefault bool) billing.Catalogue {
	c := billing.Catalogue{
		Plans: map[int64]billing.Plan{1: free, 2: pro, 3: team},
		Values: map[int64]map[string]any{
			1: {"projects": int64(1)},
			2: {"projects": int64(10), "exports": true},
			3: {"projects": int64(5), "seats": int64(3), "exports": false},
		},
		Prices: map[billing.PriceKey]int64{{Provider: "web", ID: "price_pro"}: 2, {Provider: "web", ID: "price_team"}: 3, {Provider: "mobile", ID: "price_pro"}: 3},
	}
	if withDefault {
		c.Default = &free
	}
	return c
}

func at(d time.Duration) *time.Time {
	t := now.Add(d)
	return &t
}

func sub(provider, status string, plan billing.Plan, end *time.Time, updated time.Duration) billing.Subscription {
	return billing.Subscription{Provider: provider, Status: status, Plan: plan, CurrentPeriodEnd: end, Updated: now.Add(updated)}
}

// Position: the highest tier among entitling subscriptions governs; entitlements combine
// over every entitling plan (booleans OR, numbers max); with none, the default plan's.
func TestPosition(t *testing.T) {
	tests := []struct {
		name       string
		subs       []billing.Subscription
		noDefault  bool
		plan       string // "" for none
		subscribed bool
		effective  string
	}{
		{"nothing: the default plan", nil, false, "free", false, "map[projects:1]"},
		{"nothing and no default plan", nil, true, "", false, "map[]"},
		{"active pro", []billing.Subscription{sub("web", billing.StatusActive, pro, at(time.Hour), 0)}, false, "pro", true, "map[exports:true projects:10]"},
		{"expired pro: the default again", []billing.Subscription{sub("web", billing.StatusExpired, pro, at(-time.Hour), 0)}, false, "free", false, "map[projects:1]"},
		{"a period that ended no longer entitles", []billing.Subscription{sub("web", billing.StatusCancelled, pro, at(-time.Second), 0)}, false, "free", false, "map[projects:1]"},
		{"past due within its period still entitles", []billing.Subscription{sub("mobile", billing.StatusPastDue, pro, at(time.Hour), 0)}, false, "pro", true, "map[exports:true projects:10]"},
		{"no period end: entitled", []billing.Subscription{sub("mobile", billing.StatusActive, pro, nil, 0)}, false, "pro", true, "map[exports:true projects:10]"},
		{"refunded never entitles", []billing.Subscription{sub("mobile", billing.StatusRefunded, team, nil, 0)}, false, "free", false, "map[projects:1]"},
		{"two stores combine, the higher tier governs", []billing.Subscription{
			sub("web", billing.StatusActive, pro, at(time.Hour), 0), sub("mobile", billing.StatusTrialing, team, at(time.Hour), -time.Minute),
		}, false, "team", true, "map[exports:true projects:10 seats:3]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := billing.Position("u", now, tc.subs, catalogue(!tc.noDefault))
			plan := ""
			if e.Plan() != nil {
				plan = e.Plan().Key
			}
			if plan != tc.plan || e.Subscribed() != tc.subscribed || fmt.Sprint(e.Effective) != tc.effective {
				t.Fatalf("plan %q subscribed %t effective %v, want %q %t %s", plan, e.Subscribed(), e.Effective, tc.plan, tc.subscribed, tc.effective)
			}
		})
	}
}

// The view shows the governing subscription, else the newest, and a usage counter for
// every limit, ending with the governing period (else the month).
func TestViewOf(t *testing.T) {
	lapsed := billing.Position("u", now, []billing.Subscription{
		sub("web", billing.StatusExpired, pro, at(-time.Hour), 0), sub("mobile", billing.StatusExpired, team, at(-2*time.Hour), -time.Hour),
	}, catalogue(true))
	v := billing.ViewOf(lapsed, map[string]int64{"projects": 1})
	if v.Subscribed || *v.Provider != "web" || *v.Status != billing.StatusExpired || v.Plan.Key != "free" ||
		v.Usage["projects"] != (billing.UsageView{Used: 1, Limit: 1, PeriodEnd: billing.MonthEnd(now)}) {
		t.Fatalf("lapsed view %+v", v)
	}
	active := billing.Position("u", now, []billing.Subscription{sub("web", billing.StatusActive, pro, at(time.Hour), 0)}, catalogue(true))
	v = billing.ViewOf(active, nil)
	if !v.Subscribed || v.Usage["projects"] != (billing.UsageView{Used: 0, Limit: 10, PeriodEnd: *at(time.Hour)}) || !v.Entitled("exports") || v.Entitled("seats") {
		t.Fatalf("active view %+v", v)
	}
}

// A live status whose period has ended unrenewed is shown lapsed (past due says why); /me's view keeps the store's word.
func TestStatusShown(t *testing.T) {
	for _, tc := range []struct {
		status string
		end    *time.Time
		want   string
	}{
		{billing.StatusActive, at(-time.Second), billing.StatusLapsed},
		{billing.StatusActive, at(0), billing.StatusLapsed}, // the period ends at its end
		{billing.StatusTrialing, at(-time.Hour), billing.StatusLapsed},
		{billing.StatusPastDue, at(-time.Hour), billing.StatusPastDue}, // the store said why
		{billing.StatusCancelled, at(-time.Hour), billing.StatusLapsed},
		{billing.StatusActive, at(time.Hour), billing.StatusActive},
		{billing.StatusActive, nil, billing.StatusActive},
		{billing.StatusExpired, at(-time.Hour), billing.StatusExpired},
		{billing.StatusRefunded, at(-time.Hour), billing.StatusRefunded},
	} {
		if got := billing.StatusShown(tc.status, tc.end, now); got != tc.want {
			t.Errorf("%s ending %v: shown %q, want %q", tc.status, tc.end, got, tc.want)
		}
	}
	old := billing.ViewOf(billing.Position("u", now, []billing.Subscription{sub("appstore", billing.StatusActive, pro, at(-time.Hour), 0)}, catalogue(true)), nil)
	if old.Subscribed || *old.Status != billing.StatusActive || old.StatusShown(now) != billing.StatusLapsed {
		t.Fatalf("a view of an active subscription whose period ended: %+v shown %q", old, old.StatusShown(now))
	}
	if (billing.BillingView{}).StatusShown(now) != "" {
		t.Error("a view without a subscription shows a status")
	}
}

// An answer changed when any of its fields did, and only then.
func TestCompare(t *testing.T) {
	base := billing.ViewOf(billing.Position("u", now, []billing.Subscription{sub("web", billing.StatusActive, pro, at(time.Hour), 0)}, catalogue(true)), nil)
	for _, tc := range []struct {
		name    string
		edit    func(v *billing.BillingView)
		changed bool
	}{
		{"the same answer", func(*billing.BillingView) {}, false},
		{"another status", func(v *billing.BillingView) { s := billing.StatusCancelled; v.Status = &s }, true},
		{"another period end", func(v *billing.BillingView) { v.CurrentPeriodEnd = at(2 * time.Hour) }, true},
		{"another limit", func(v *billing.BillingView) { v.Entitlements = map[string]any{"projects": int64(11), "exports": true} }, true},
		{"a usage count", func(v *billing.BillingView) {
			v.Usage = map[string]billing.UsageView{"projects": {Used: 1, Limit: 10, PeriodEnd: *at(time.Hour)}}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := billing.ViewOf(billing.Position("u", now, []billing.Subscription{sub("web", billing.StatusActive, pro, at(time.Hour), 0)}, catalogue(true)), nil)
			tc.edit(&next)
			change, changed, err := billing.Compare("u", base, next)
			if err != nil || changed != tc.changed {
				t.Fatalf("changed %t (%v), want %t", changed, err, tc.changed)
			}
			body, err := change.Body(billing.ChangeCause{Provider: "web", ProviderEventID: "evt_1", EventType: "x"}, now)
			if err != nil || len(body) == 0 {
				t.Fatalf("body %s (%v)", body, err)
			}
		})
	}
}

// Ordering starts from time: later wins, earlier is stale, the same instant is undecided;
// anything supersedes nothing.
func TestByTime(t *testing.T) {
	stored := billing.Stored{LastEventID: "e1", LastEventAt: now}
	for _, tc := range []struct {
		name    string
		at      time.Time
		stored  billing.Stored
		order   billing.Order
		decided bool
	}{
		{"later", now.Add(time.Second), stored, billing.Supersedes, true},
		{"earlier", now.Add(-time.Second), stored, billing.Stale, true},
		{"the same instant", now, stored, billing.Supersedes, false},
		{"nothing stored", now.Add(-time.Hour), billing.Stored{}, billing.Supersedes, true},
	} {
		if o, decided := billing.ByTime(tc.at, tc.stored); o != tc.order || decided != tc.decided {
			t.Errorf("%s: %v %t, want %v %t", tc.name, o, decided, tc.order, tc.decided)
		}
	}
}

func TestPlanForAndManagedInApp(t *testing.T) {
	c := catalogue(true)
	if p, ok := c.PlanFor("web", []string{"price_unknown", "price_pro", "price_team"}); !ok || p.Key != "team" {
		t.Fatalf("the highest tier of the prices: %v %t", p, ok)
	}
	if p, ok := c.PlanFor("mobile", []string{"price_pro"}); !ok || p.Key != "team" {
		t.Fatalf("prices are per provider: %v %t", p, ok)
	}
	if _, ok := c.PlanFor("web", []string{"price_unknown"}); ok {
		t.Fatal("an unmapped price sold a plan")
	}
	mobileOnly := billing.Position("u", now, []billing.Subscription{sub("mobile", billing.StatusActive, pro, at(time.Hour), 0)}, c)
	both := billing.Position("u", now, []billing.Subscription{
		sub("mobile", billing.StatusActive, pro, at(time.Hour), 0), sub("web", billing.StatusActive, pro, at(time.Hour), 0),
	}, c)
	inApp := func(p string) bool { return p == "mobile" }
	if !mobileOnly.ManagedInApp(inApp) || both.ManagedInApp(inApp) {
		t.Fatalf("managed in app: mobile only %t, both %t", mobileOnly.ManagedInApp(inApp), both.ManagedInApp(inApp))
	}
	for id, want := range map[string]bool{"5a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d": true, "5a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3": false, "5a4c8162x3b1e-4f7a-9d2c-8e6f0a1b2c3d": false, "": false} {
		if billing.IsUUID(id) != want {
			t.Errorf("IsUUID(%q) != %t", id, want)
		}
	}
}

// A read from the provider's API supersedes older events, never a newer one or a final
// state, and a read of what the last read stored changes nothing. A later read supersedes
// an earlier one even within the same second, which the read's time to the second (what
// orders it against events) cannot tell.
func TestBySnapshot(t *testing.T) {
	same := func() bool { return true }
	differs := func() bool { return false }
	event := billing.Stored{LastEventID: "e1", LastEventType: "updated", LastEventAt: now}
	firstRead := now.Add(100 * time.Millisecond)
	read := billing.Stored{LastEventID: billing.SnapshotEventID(firstRead), LastEventType: billing.SnapshotEventType, LastEventAt: now}
	oldRead := billing.Stored{LastEventID: "backfill_" + fmt.Sprint(now.Unix()), LastEventType: billing.SnapshotEventType, LastEventAt: now}
	playRead := billing.Stored{LastEventID: "pubsub-1", LastEventType: billing.SnapshotEventType, LastEventAt: firstRead}
	// readAt is a read at exactly at, placed among events at its second, as the web
	// provider's are.
	readAt := func(at time.Time) billing.Reading {
		return billing.Reading{Snapshot: true, At: at.Truncate(time.Second), ReadAt: at}
	}
	for _, tc := range []struct {
		name   string
		read   billing.Reading
		stored billing.Stored
		final  bool
		same   func() bool
		want   billing.Order
	}{
		{"nothing stored", readAt(now), billing.Stored{}, false, differs, billing.Supersedes},
		{"after an older event", readAt(now.Add(time.Second)), event, false, differs, billing.Supersedes},
		{"an event of the same second stands", readAt(now.Add(900 * time.Millisecond)), event, false, differs, billing.Stale},
		{"a newer event stands", readAt(now.Add(-time.Second)), event, false, differs, billing.Stale},
		{"a final state stands", readAt(now.Add(time.Hour)), event, true, differs, billing.Stale},
		{"the same read again", readAt(now.Add(time.Hour)), read, false, same, billing.Same},
		{"a read that found a change", readAt(now.Add(time.Hour)), read, false, differs, billing.Supersedes},
		{"a later read of the same second", readAt(now.Add(600 * time.Millisecond)), read, false, differs, billing.Supersedes},
		{"the same second's later read, unchanged", readAt(now.Add(600 * time.Millisecond)), read, false, same, billing.Same},
		{"an earlier read of the same second", readAt(now.Add(50 * time.Millisecond)), read, false, differs, billing.Stale},
		{"a read named to the second only", readAt(now.Add(600 * time.Millisecond)), oldRead, false, differs, billing.Supersedes},
		{"a read stored under an event's id", billing.Reading{Snapshot: true, At: firstRead.Add(time.Millisecond)}, playRead, false, differs, billing.Supersedes},
		{"the same instant under an event's id", billing.Reading{Snapshot: true, At: firstRead}, playRead, false, differs, billing.Stale},
	} {
		if got := billing.BySnapshot(tc.read, tc.stored, tc.final, tc.same); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMinorUnits(t *testing.T) {
	for _, tc := range []struct {
		price    float64
		currency string
		want     int64
		ok       bool
	}{
		{9.99, "USD", 999, true},
		{10.79, "eur", 1079, true},
		{1200, "JPY", 1200, true},
		{1.234, "KWD", 1234, true},
		{0.1 + 0.2, "USD", 30, true},
		{-1, "USD", 0, false},
		{9.99, "", 0, false},
		{9.99, "dollars", 0, false},
	} {
		price := tc.price
		if got, ok := billing.MinorUnits(&price, tc.currency); got != tc.want || ok != tc.ok {
			t.Errorf("%v %s: %d %t, want %d %t", tc.price, tc.currency, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := billing.MinorUnits(nil, "USD"); ok {
		t.Error("no price converted")
	}
}

func TestMonthlyAndPeriods(t *testing.T) {
	day := time.Date(2026, 1, 31, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		amount  int64
		period  string
		monthly float64
		ok      bool
	}{
		{1200, "P1Y", 100, true}, {1000, "P1M", 1000, true}, {300, "P3M", 100, true},
		{1200, "P1W", 5200, true}, {100, "P1D", 3041.6666666666665, true},
		{1000, "", 0, false}, {1000, "P0M", 0, false}, {1000, "P1H", 0, false}, {1000, "1M", 0, false},
	} {
		got, ok := billing.Monthly(c.amount, c.period)
		if ok != c.ok || math.Abs(got-c.monthly) > 1e-9 {
			t.Errorf("Monthly(%d, %q) = %v %v, want %v %v", c.amount, c.period, got, ok, c.monthly, c.ok)
		}
	}
	for _, c := range []struct {
		end  time.Time
		want string
	}{
		{day.AddDate(0, 0, 7), "P1W"}, {day.AddDate(0, 1, 0), "P1M"}, {day.AddDate(0, 0, 28), "P1M"},
		{day.AddDate(0, 3, 0), "P3M"}, {day.AddDate(1, 0, 0), "P1Y"}, {day.AddDate(0, 0, 45), ""}, {day.AddDate(0, 0, 3), ""},
	} {
		if got := billing.PeriodBetween(day, c.end); got != c.want {
			t.Errorf("PeriodBetween(%s) = %q, want %q", c.end.Sub(day), got, c.want)
		}
	}
}

// Durations read as people write them for billing: Go's syntax plus whole days.
func TestParseDuration(t *testing.T) {
	day := 24 * time.Hour
	for _, long := range []string{"213504d", "876001h", "9999999999h"} {
		if _, err := billing.ParseDuration(long); err == nil || !regexp.MustCompile(`36500d`).MatchString(err.Error()) {
			t.Errorf("ParseDuration(%q): %v, want the ceiling named", long, err)
		}
	}
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30d", 30 * day, true}, {"1d12h", 36 * time.Hour, true}, {"90m", 90 * time.Minute, true}, {"2s", 2 * time.Second, true},
		{" 7d ", 7 * day, true}, {"0d", 0, false}, {"0s", 0, false}, {"-1d", 0, false}, {"1.5d", 0, false}, {"d", 0, false},
		{"30", 0, false}, {"", 0, false}, {"1d-2h", 0, false}, {"soon", 0, false},
		// One ceiling, 36500 days: what would overflow is refused, never wrapped.
		{"36500d", 36500 * day, true}, {"36500d1s", 0, false}, {"36501d", 0, false}, {"213504d", 0, false},
		{"99999999999999999999d", 0, false}, {"876000h", 876000 * time.Hour, true}, {"876001h", 0, false},
		{"9999999999h", 0, false}, {"36499d24h1m", 0, false},
	} {
		got, err := billing.ParseDuration(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}

		if tc.ok {
			if again, err := billing.ParseDuration(billing.FormatDuration(got)); err != nil || again != got {
				t.Errorf("FormatDuration(%v) = %q does not read back", got, billing.FormatDuration(got))
			}
		}
	}
}
