package adapty

import (
	"os"
	"testing"

	"github.com/tollgate/tollgate/internal/billing"
)

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
		if got, ok := minorUnits(&price, tc.currency); got != tc.want || ok != tc.ok {
			t.Errorf("%v %s: %d %t, want %d %t", tc.price, tc.currency, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := minorUnits(nil, "USD"); ok {
		t.Error("no price converted")
	}
}

// The fixture's price reaches the facts in minor units.
func TestFactsCarryThePrice(t *testing.T) {
	body, err := os.ReadFile("../testdata/mobile/subscription_started.json")
	if err != nil {
		t.Fatal(err)
	}
	a := New("s", nil)
	ev, err := a.Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Read(ev, body)
	if err != nil {
		t.Fatal(err)
	}
	state, _, err := a.Apply(r, billing.Stored{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := a.Facts(billing.Stored{State: string(state), LastEventID: ev.ID})
	if err != nil || f.Amount != 999 || f.Currency != "usd" || f.Status != billing.StatusActive {
		t.Fatalf("facts %+v (%v), want 999 usd active", f, err)
	}
}
