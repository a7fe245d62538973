package adapty

import (
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

func TestMobileCanonical(t *testing.T) {
	at := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	expires := "2026-11-01T12:00:01.000000+0000"
	expiresAt, _ := parseMobileTime(expires)
	yes, no := true, false
	prior := mobileState{Status: billing.StatusActive, PeriodEnd: &expiresAt}
	tests := []struct {
		event   string
		props   func(p *mobileEvent)
		status  string
		horizon *time.Time
	}{
		{"subscription_started", func(ev *mobileEvent) { ev.EventProperties.SubscriptionExpiresAt = expires }, billing.StatusActive, &expiresAt},
		{"subscription_renewed", func(ev *mobileEvent) { ev.EventProperties.SubscriptionExpiresAt = expires }, billing.StatusActive, &expiresAt},
		{"subscription_cancelled", nil, billing.StatusCancelled, &expiresAt},
		{"subscription_expired", nil, billing.StatusExpired, &at},
		{"subscription_refunded", nil, billing.StatusRefunded, &at},
		{"non_subscription_purchase", func(ev *mobileEvent) { ev.EventProperties.IsLifetime = &yes }, billing.StatusActive, nil},
		{"access_level_updated", func(ev *mobileEvent) { ev.EventProperties.IsRefund = &yes; ev.EventProperties.ExpiresAt = expires }, billing.StatusRefunded, &expiresAt},
		{"access_level_updated", func(ev *mobileEvent) { ev.EventProperties.IsActive = &no }, billing.StatusExpired, &at},
		{"access_level_updated", func(ev *mobileEvent) {
			ev.EventProperties.IsInGracePeriod = &yes
			ev.EventProperties.ExpiresAt = expires
		}, billing.StatusPastDue, &expiresAt},
		{"access_level_updated", func(ev *mobileEvent) { ev.EventProperties.WillRenew = &no; ev.EventProperties.ExpiresAt = expires }, billing.StatusCancelled, &expiresAt},
		{"access_level_updated", func(ev *mobileEvent) { ev.EventProperties.IsActive = &yes; ev.EventProperties.ExpiresAt = expires }, billing.StatusActive, &expiresAt},
	}
	for i, tc := range tests {
		var ev mobileEvent
		if tc.props != nil {
			tc.props(&ev)
		}
		got, err := canonical(tc.event, ev, at, prior)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != tc.status || (got.PeriodEnd == nil) != (tc.horizon == nil) || (got.PeriodEnd != nil && !got.PeriodEnd.Equal(*tc.horizon)) {
			t.Errorf("%d %s: got %s %v, want %s %v", i, tc.event, got.Status, got.PeriodEnd, tc.status, tc.horizon)
		}
	}
}
