package reader_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// TestRecordUsageNeverOvershoots: thirty concurrent uses of a limit of ten record ten and
// refuse twenty; a boolean entitlement and an amount of zero are refused; a user with no
// subscription counts against the default plan by calendar month.
func TestRecordUsageNeverOvershoots(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		for _, name := range []string{"created", "updated", "invoice"} {
			h.MustSend(billing.ProviderWeb, billingtest.WebLifecycle(t, "sub_usage")[name])
		}
		ctx := context.Background()
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, refused := 0, 0
		for range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := h.Svc.RecordUsage(ctx, billingtest.FixtureUser, "projects", 1)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, billing.ErrLimitExceeded):
					refused++
				default:
					t.Errorf("RecordUsage: %v", err)
				}
			}()
		}
		wg.Wait()
		if ok != 10 || refused != 20 {
			t.Fatalf("%d recorded and %d refused, want 10 and 20", ok, refused)
		}
		e, _ := h.Svc.Entitlements(ctx, billingtest.FixtureUser)
		if used, err := h.Svc.UsageThisPeriod(ctx, e); err != nil || used["projects"] != 10 {
			t.Fatalf("counters %v (%v), want projects 10", used, err)
		}
		if e.UsagePeriodEnd().Unix() != 1793534400 {
			t.Fatalf("usage period ends %v, want the subscription's period end", e.UsagePeriodEnd())
		}
		if _, err := h.Svc.RecordUsage(ctx, billingtest.FixtureUser, "exports", 1); !errors.Is(err, billing.ErrNotEntitled) {
			t.Fatalf("usage of a boolean entitlement: %v, want billing.ErrNotEntitled", err)
		}
		if _, err := h.Svc.RecordUsage(ctx, billingtest.FixtureUser, "projects", 0); !errors.Is(err, billing.ErrInvalidAmount) {
			t.Fatalf("amount 0: %v", err)
		}
		// A user without a subscription counts against the default plan, per calendar month.
		const freeUser = "22222222-3333-4444-5555-666666666666"
		u, err := h.Svc.RecordUsage(ctx, freeUser, "projects", 1)
		if err != nil || u.Used != 1 || u.Remaining != 0 || !u.PeriodEnd.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("free user: %+v %v", u, err)
		}
		if _, err := h.Svc.RecordUsage(ctx, freeUser, "projects", 1); !errors.Is(err, billing.ErrLimitExceeded) {
			t.Fatalf("second free project: %v, want billing.ErrLimitExceeded", err)
		}
	})
}
