package pipeline_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// TestAnEventToRollBackAloneGuardsItsBatch: a batch is first applied without savepoints.
// When one of its events must be rolled back alone (here an unmapped price, after its
// customer row was written), the batch is applied again with a savepoint per event: the
// sound event commits in the same transaction, the unresolved one leaves no row of its own,
// and each is logged once, by the attempt that committed.
func TestAnEventToRollBackAloneGuardsItsBatch(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d, func(o *billingtest.Options) { o.Batching = pipeline.Batching{Size: 2, Wait: time.Second} })
		const soundUser, newUser = "00000000-0000-4000-8000-0000000000a1", "0b7e7a52-6f2b-4c55-9a3e-2d1f0c9e8b7a"
		event := func(sub, customer, user, price string) []byte {
			return billingtest.Edit(t, billingtest.Fixture(t, "web/customer.subscription.updated.json"), func(m map[string]any) {
				m["id"] = "evt_" + sub
				obj := billingtest.Path(m, "data", "object")
				obj["id"], obj["customer"], obj["metadata"] = sub, customer, map[string]any{"user_id": user}
				if price != "" {
					billingtest.Path(obj["items"].(map[string]any)["data"].([]any)[0].(map[string]any), "price")["id"] = price
				}
			})
		}
		codes := make(chan int, 2)
		for _, body := range [][]byte{event("sub_sound", "cus_sound", soundUser, ""), event("sub_unmapped", "cus_new", newUser, "price_team_monthly")} {
			go func() { codes <- h.SendWeb(body).Code }()
		}
		for range 2 {
			if code := <-codes; code != http.StatusOK {
				t.Fatalf("a delivery answered %d", code)
			}
		}
		logs := h.Logs.String()
		if n := strings.Count(logs, "applying it again with a savepoint per event"); n != 1 {
			t.Fatalf("the batch was applied again %d times, want once:\n%s", n, logs)
		}
		if transactions, events := h.Batches(); transactions != 1 || events != 2 {
			t.Errorf("%v transactions of %v events, want both events in one", transactions, events)
		}
		if n := strings.Count(logs, "price_team_monthly"); n != 1 {
			t.Errorf("%d log lines name the unmapped price, want 1:\n%s", n, logs)
		}
		if got := h.Canonical(billing.ProviderWeb, "sub_sound"); got == nil || got.UserID != soundUser {
			t.Errorf("the sound event's subscription: %+v", got)
		}
		if n := h.CountRows("billing_customers where user_id = '" + newUser + "'"); n != 0 {
			t.Errorf("the unresolved event left its customer row behind: %s", h.DumpTables("billing_customers"))
		}
		if n := h.CountRows("provider_events where provider_event_id = 'evt_sub_unmapped' and outcome = 'unresolved'"); n != 1 {
			t.Errorf("the unresolved event's record: %s", h.DumpTables("provider_events"))
		}
	})
}
