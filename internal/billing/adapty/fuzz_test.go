package adapty

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tollgate/tollgate/internal/billing"
)

func addFixtureSeeds(f *testing.F, dir string) {
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", dir, "*.json"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func validStatus(s string) bool {
	switch s {
	case billing.StatusActive, billing.StatusTrialing, billing.StatusPastDue, billing.StatusCancelled, billing.StatusExpired, billing.StatusRefunded:
		return true
	}
	return false
}

func FuzzDecodeMobileEvent(f *testing.F) {
	addFixtureSeeds(f, "mobile")
	f.Add([]byte(`{"event_type":"access_level_updated","event_datetime":"2026-10-01T12:00:04.118000+0000","event_properties":{"is_active":false}}`))
	f.Add([]byte(`{"event_type":"subscription_started","event_datetime":"2026-10-01T12:00:04+0000","event_properties":{"subscription_expires_at":"bad"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, at, err := decodeMobileEvent(body)
		if err != nil {
			return
		}
		if key := ev.subscriptionKey(); key != ev.subscriptionKey() {
			t.Fatal("the subscription key is not stable")
		}
		for eventType := range mobileRank {
			next, err := canonical(eventType, ev, at, mobileState{})
			if err != nil {
				continue
			}
			if !validStatus(next.Status) {
				t.Fatalf("%s gave status %q", eventType, next.Status)
			}
			if (next.Status == billing.StatusExpired || next.Status == billing.StatusRefunded) && next.PeriodEnd == nil {
				t.Fatalf("%s: %s without an end", eventType, next.Status)
			}
			// The state is stored as JSON: it must come back the same.
			raw, err := json.Marshal(next)
			if err != nil {
				t.Fatal(err)
			}
			var back mobileState
			if err := json.Unmarshal(raw, &back); err != nil || back.Status != next.Status || back.ProductID != next.ProductID ||
				back.CustomerUserID != next.CustomerUserID || (back.PeriodEnd == nil) != (next.PeriodEnd == nil) ||
				(back.PeriodEnd != nil && !back.PeriodEnd.Equal(*next.PeriodEnd)) {
				t.Fatalf("state %+v does not survive storage: %+v (%v)", next, back, err)
			}
		}
	})
}
