package reader_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// A metered entitlement's limit is read from usage_limits, the table plans sync
// writes it to, and RecordUsage enforces that limit.
func TestLimitsComeFromUsageLimits(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		ctx := context.Background()
		const user = "0b4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d"
		e, err := h.Svc.Entitlements(ctx, user)
		if limit, ok := e.Limit("projects"); err != nil || !ok || limit != 1 {
			t.Fatalf("free plan's projects limit %d %v (%v), want 1 from the plans file", limit, ok, err)
		}
		if _, err := d.ExecContext(ctx, `update usage_limits set limit_value = 3
			where plan_id = (select id from plans where key = 'free') and entitlement_id = (select id from entitlements where name = 'projects')`); err != nil {
			t.Fatal(err)
		}
		e, err = h.Svc.Entitlements(ctx, user)
		if limit, _ := e.Limit("projects"); err != nil || limit != 3 {
			t.Fatalf("projects limit %d (%v) after usage_limits says 3", limit, err)
		}
		for i := range 3 {
			if _, err := h.Svc.RecordUsage(ctx, user, "projects", 1); err != nil {
				t.Fatalf("usage %d of 3: %v", i+1, err)
			}
		}
		if _, err := h.Svc.RecordUsage(ctx, user, "projects", 1); !errors.Is(err, billing.ErrLimitExceeded) {
			t.Fatalf("the 4th of 3: %v, want billing.ErrLimitExceeded", err)
		}
	})
}
