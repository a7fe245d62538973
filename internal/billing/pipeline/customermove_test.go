package pipeline_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/webhooks"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// A web event that moves a subscription to another customer (Stripe never does) is applied
// as it says, logged at warn with both customers and users, and shown on both users'
// timelines.
func TestWebSubscriptionMovedToAnotherCustomer(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		const other = "0b4f2f0e-6d43-4c55-9a41-3c1d2e7f8a90"
		h.MustSend(billing.ProviderWeb, billingtest.Fixture(t, "web/customer.subscription.updated.json"))
		moved := billingtest.Edit(t, billingtest.Fixture(t, "web/customer.subscription.updated.json"), func(m map[string]any) {
			m["id"], m["created"] = "evt_moved_customer", m["created"].(float64)+60
			obj := billingtest.Path(m, "data", "object")
			obj["customer"], obj["metadata"] = "cus_someone_else", map[string]any{"user_id": other}
		})
		if got := h.MustSend(billing.ProviderWeb, moved).Get(webhooks.HeaderOutcome); got != billing.OutcomeApplied {
			t.Fatalf("the moving event: %s", got)
		}
		if got := h.Answer(t, other); !strings.HasPrefix(got, "true active pro") {
			t.Errorf("the new customer's user: %s", got)
		}
		if got := h.Answer(t, billingtest.FixtureUser); strings.HasPrefix(got, "true") {
			t.Errorf("the old customer's user still entitled: %s", got)
		}
		logs := h.Logs.String()
		if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "moves its subscription to another customer") ||
			!strings.Contains(logs, "customer_before=cus_TESTa1B2c3D4e5 customer_after=cus_someone_else user_before="+billingtest.FixtureUser+" user_after="+other) {
			t.Errorf("no warning naming both customers and users:\n%s", logs)
		}
		for _, user := range []string{billingtest.FixtureUser, other} {
			rows, err := dbq.New(d).CustomerTimeline(context.Background(), dbq.CustomerTimelineParams{UserID: sql.NullString{String: user, Valid: true}, Max: 10})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, r := range rows {
				found = found || r.ProviderEventID == "evt_moved_customer"
			}
			if !found {
				t.Errorf("%s's timeline lacks the moving event (%d rows)", user, len(rows))
			}
		}
	})
}
