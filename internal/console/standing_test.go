package console

import (
	"database/sql"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/identity"
)

func TestStandingCountsSubscribersAndMRR(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ahead := sql.NullTime{Time: now.Add(24 * time.Hour), Valid: true}
	n := 0
	sub := func(provider, status, currency, period string, amount int64, end sql.NullTime) dbq.ConsoleSubscriptionsRow {
		n++
		r := dbq.ConsoleSubscriptionsRow{UserID: fmt.Sprint("user-", n), Provider: provider, Status: status, CurrentPeriodEnd: end, PlanKey: "pro"}
		if currency != "" {
			r.Amount, r.Currency = sql.NullInt64{Int64: amount, Valid: true}, sql.NullString{String: currency, Valid: true}
			r.BillingPeriod = sql.NullString{String: period, Valid: period != ""}
		}
		return r
	}
	got := standingAt([]dbq.ConsoleSubscriptionsRow{
		sub("web", "active", "usd", "P1M", 999, ahead),
		sub("web", "active", "usd", "P1Y", 12000, ahead),                                              // 100.00 a month
		sub("web", "trialing", "usd", "P1M", 999, ahead),                                              // a subscriber, no money
		sub("web", "expired", "usd", "P1M", 999, ahead),                                               // not entitling
		sub("web", "active", "usd", "P1M", 999, sql.NullTime{Time: now.Add(-time.Hour), Valid: true}), // ended
		sub("mobile", "active", "eur", "P1W", 300, ahead),                                             // 300 × 52 / 12 = 1300
		sub("playstore", "active", "usd", "", 999, ahead),                                             // period unknown
		sub("appstore", "cancelled", "", "", 0, ahead),                                                // price unknown, still entitling
		sub("grant", "active", "", "", 0, ahead),                                                      // given by hand: no money, not unpriced
	}, now)
	want := standing{
		{Provider: "appstore", Plan: "pro", Subscribers: 1, Unpriced: 1},
		{Provider: "grant", Plan: "pro", Subscribers: 1},
		{Provider: "mobile", Plan: "pro", Currency: "eur", Subscribers: 1, MRR: 1300},
		{Provider: "playstore", Plan: "pro", Subscribers: 1, Unpriced: 1},
		{Provider: "web", Plan: "pro", Currency: "usd", Subscribers: 3, MRR: 999 + 1000},
	}
	if len(got) != len(want) {
		t.Fatalf("standing %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// Subscribers are people: one person's two subscriptions at one provider count once there,
// and a person at two providers counts once under each and once in all.
func TestSubscribersArePeople(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ahead := sql.NullTime{Time: now.Add(24 * time.Hour), Valid: true}
	row := func(user, provider, plan string) dbq.ConsoleSubscriptionsRow {
		return dbq.ConsoleSubscriptionsRow{UserID: user, Provider: provider, PlanKey: plan, Status: "active", CurrentPeriodEnd: ahead}
	}
	subs := []dbq.ConsoleSubscriptionsRow{
		row("ann", "web", "pro"), row("ann", "web", "pro"), row("ann", "playstore", "pro"), row("bob", "web", "team"),
		{UserID: "cy", Provider: "web", PlanKey: "pro", Status: "expired", CurrentPeriodEnd: ahead},
	}
	byProvider := countPeople(subs, now, func(s dbq.ConsoleSubscriptionsRow) string { return s.Provider })
	total := countPeople(subs, now, func(dbq.ConsoleSubscriptionsRow) struct{} { return struct{}{} })[struct{}{}]
	if byProvider["web"] != 2 || byProvider["playstore"] != 1 || len(byProvider) != 2 || total != 2 {
		t.Errorf("by provider %v, total %d; want web 2, playstore 1, total 2", byProvider, total)
	}
	if got := standingAt(subs, now); len(got) != 3 || got[1].Subscribers != 1 {
		t.Errorf("standing %+v: ann's two web pro subscriptions are one person", got)
	}
}

func TestChartsKeepUnknownDaysApart(t *testing.T) {
	days := []string{"2026-11-24", "2026-11-25", "2026-11-26"}
	counts := dayCounts{"2026-11-24": {"web": 4}, "2026-11-26": {"web": 6, "mobile": 1}}
	level := chartOf("active", "Active", true, days, counts, []string{"web", "mobile", "appstore"}, count)
	if len(level.Series) != 2 || !math.IsNaN(level.Series[0].Values[1]) || level.Total() != 7 {
		t.Fatalf("level chart %+v, total %v", level.Series, level.Total())
	}
	if svg := string(level.SVG()); strings.Count(svg, "<circle") != 3 || strings.Contains(svg, "NaN") {
		t.Fatalf("a level with a gap draws dots, not a line through nothing:\n%s", svg)
	}
	flow := chartOf("new", "New", false, days, counts, []string{"web", "mobile"}, count)
	if flow.Total() != 11 || flow.Series[0].Values[1] != 0 || len(flow.Rows()) != 2 {
		t.Fatalf("flow chart %+v total %v rows %v", flow.Series, flow.Total(), flow.Rows())
	}
	if svg := string(flow.SVG()); strings.Count(svg, "<rect") != 3 {
		t.Fatalf("three bars expected:\n%s", svg)
	}
}

func TestOperatorsMustHaveConfirmedTheirAddress(t *testing.T) {
	c := &Console{opts: Options{Operators: []string{"ops@example.test"}}}
	confirmed := time.Now()
	for _, tc := range []struct {
		user *identity.User
		in   bool
	}{
		{nil, false},
		{&identity.User{Email: "ops@example.test", EmailConfirmedAt: &confirmed}, true},
		{&identity.User{Email: "OPS@Example.test", EmailConfirmedAt: &confirmed}, true},
		{&identity.User{Email: "ops@example.test"}, false}, // signed up first with the operator's address
		{&identity.User{Email: "other@example.test", EmailConfirmedAt: &confirmed}, false},
	} {
		if got := c.isOperator(tc.user); got != tc.in {
			t.Errorf("%+v: operator %v, want %v", tc.user, got, tc.in)
		}
	}
}
