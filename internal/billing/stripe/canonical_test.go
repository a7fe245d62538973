package stripe

import (
	"os"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// fixtureCreated is the created time of the web fixtures.
const fixtureCreated = int64(1790856000)

func TestWebCanonical(t *testing.T) {
	at := time.Unix(fixtureCreated, 0).UTC()
	end := int64(fixtureCreated + 30*86400)
	i64 := func(v int64) *int64 { return &v }
	sub := func(status string, fn func(s *subscription)) subscription {
		s := subscription{ID: "sub_1", Status: status, StartDate: fixtureCreated}
		s.Items.Data = append(s.Items.Data, item{CurrentPeriodEnd: i64(end)})
		if fn != nil {
			fn(&s)
		}
		return s
	}
	tests := []struct {
		name        string
		sub         subscription
		paidThrough *time.Time
		paidAt      *time.Time
		status      string
		horizon     *int64
	}{
		{"trialing", sub("trialing", func(s *subscription) { s.TrialEnd = i64(end - 100) }), nil, nil, billing.StatusTrialing, i64(end - 100)},
		{"active", sub("active", nil), nil, nil, billing.StatusActive, i64(end)},
		{"active cancelling at period end", sub("active", func(s *subscription) { s.CancelAtPeriodEnd = true }), nil, nil, billing.StatusCancelled, i64(end)},
		{"active with cancel_at", sub("active", func(s *subscription) { s.CancelAt = i64(end - 5) }), nil, nil, billing.StatusCancelled, i64(end - 5)},
		{"past_due", sub("past_due", nil), nil, nil, billing.StatusPastDue, i64(end)},
		{"incomplete never entitles", sub("incomplete", nil), nil, nil, billing.StatusPastDue, i64(fixtureCreated)},
		{"unpaid", sub("unpaid", nil), nil, nil, billing.StatusExpired, i64(fixtureCreated)},
		{"paused", sub("paused", nil), nil, nil, billing.StatusExpired, i64(fixtureCreated)},
		{"incomplete_expired", sub("incomplete_expired", nil), nil, nil, billing.StatusExpired, i64(fixtureCreated)},
		{"canceled uses ended_at", sub("canceled", func(s *subscription) { s.EndedAt = i64(fixtureCreated + 7) }), nil, nil, billing.StatusExpired, i64(fixtureCreated + 7)},
		{"old shape period end", sub("active", func(s *subscription) { s.Items.Data[0].CurrentPeriodEnd = nil; s.CurrentPeriodEnd = i64(end) }), nil, nil, billing.StatusActive, i64(end)},
		{"paid invoice lifts past_due", sub("past_due", nil), billing.UnixTime(end + 1000), billing.UnixTime(fixtureCreated + 1), billing.StatusActive, i64(end + 1000)},
		{"older invoice does not lift past_due", sub("past_due", nil), billing.UnixTime(end + 1000), billing.UnixTime(fixtureCreated - 1), billing.StatusPastDue, i64(end + 1000)},
		{"invoice never revives expired", sub("canceled", func(s *subscription) { s.EndedAt = i64(fixtureCreated + 7) }), billing.UnixTime(end), billing.UnixTime(fixtureCreated + 9), billing.StatusExpired, i64(fixtureCreated + 7)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, horizon, err := canonical(tc.sub, at, tc.paidThrough, tc.paidAt)
			if err != nil {
				t.Fatal(err)
			}
			if status != tc.status || (horizon == nil) != (tc.horizon == nil) || (horizon != nil && horizon.Unix() != *tc.horizon) {
				t.Fatalf("got %s %v, want %s %v", status, horizon, tc.status, unixPtr(tc.horizon))
			}
		})
	}
	if _, _, err := canonical(sub("mystery", nil), at, nil, nil); err == nil {
		t.Fatal("unknown status accepted")
	}
}

// Facts carry what the subscription bills per period when its items say so.
func TestFactsCarryTheAmount(t *testing.T) {
	raw, err := os.ReadFile("../testdata/web/customer.subscription.updated.json")
	if err != nil {
		t.Fatal(err)
	}
	a := New(testSecret)
	ev, err := a.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Read(ev, raw)
	if err != nil {
		t.Fatal(err)
	}
	state, decoded, err := a.Apply(r, billing.Stored{})
	if err != nil {
		t.Fatal(err)
	}
	for _, stored := range []billing.Stored{{State: string(state), Decoded: decoded}, {State: string(state)}} {
		f, err := a.Facts(stored)
		if err != nil || f.Amount != 999 || f.Currency != "usd" || f.Status != billing.StatusActive || len(f.Products) != 1 {
			t.Fatalf("facts %+v (%v), want 999 usd, active, one price", f, err)
		}
	}
	two := subscription{}
	two.Items.Data = make([]item, 2)
	for i, n := range []int64{500, 250} {
		two.Items.Data[i].Price.UnitAmount, two.Items.Data[i].Price.Currency = &n, "eur"
	}
	q := int64(3)
	two.Items.Data[1].Quantity = &q
	if amount, currency, period := two.amount(); amount != 1250 || currency != "eur" || period != "" {
		t.Fatalf("two items: %d %s %q, want 1250 eur and no period", amount, currency, period)
	}
	for i, interval := range []string{"year", "year"} {
		two.Items.Data[i].Price.Recurring = &struct {
			Interval      string `json:"interval"`
			IntervalCount int64  `json:"interval_count"`
		}{interval, 1}
	}
	if _, _, period := two.amount(); period != "P1Y" {
		t.Fatalf("yearly items: period %q, want P1Y", period)
	}
	two.Items.Data[1].Price.Recurring.Interval = "month"
	if _, _, period := two.amount(); period != "" {
		t.Fatalf("items on different periods: period %q, want none", period)
	}
	two.Items.Data[1].Price.Currency = "usd"
	if amount, currency, _ := two.amount(); amount != 0 || currency != "" {
		t.Fatalf("two currencies: %d %s, want none", amount, currency)
	}
}
