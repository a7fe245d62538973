package adapty

import (
	"os"
	"testing"

	"github.com/tollgate/tollgate/internal/billing"
)

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
