package reader_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// TestInspectShowsSubscriptionsAndEventsNamingTheUser: the report lists the user's customer,
// subscription and billing view, and the events that name them with what became of each,
// an unresolved one included — not another user's whose subscription id contains theirs.
func TestInspectShowsSubscriptionsAndEventsNamingTheUser(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		h.MustSend(billing.ProviderWeb, billingtest.Fixture(t, "web/customer.subscription.updated.json"))
		h.MustSend(billing.ProviderWeb, billingtest.Edit(t, billingtest.Fixture(t, "web/customer.subscription.updated.json"), func(m map[string]any) {
			m["id"] = "evt_unmapped_for_user"
			obj := billingtest.Path(m, "data", "object")
			obj["id"], obj["customer"] = "sub_other", "cus_other"
			billingtest.Path(obj["items"].(map[string]any)["data"].([]any)[0].(map[string]any), "price")["id"] = "price_nobody_sells"
		}))
		h.MustSend(billing.ProviderMobile, billingtest.Fixture(t, "mobile/subscription_renewed.android.json")) // another user
		// Another user's subscription whose id contains this user's: a text search of the
		// payloads took its event for this user's.
		h.MustSend(billing.ProviderWeb, billingtest.Edit(t, billingtest.Fixture(t, "web/customer.subscription.updated.json"), func(m map[string]any) {
			m["id"] = "evt_of_another_user"
			obj := billingtest.Path(m, "data", "object")
			obj["id"], obj["customer"] = "sub_1TESTa1B2c3D4e5F6g7H8i9_2", "cus_another"
			obj["metadata"] = map[string]any{"user_id": "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e60"}
		}))

		r, err := h.Svc.Inspect(context.Background(), billingtest.FixtureUser)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Customers) != 1 || *r.Customers[0].WebCustomerID != "cus_TESTa1B2c3D4e5" {
			t.Fatalf("customers %+v", r.Customers)
		}
		if len(r.Subscriptions) != 1 || r.Subscriptions[0].ID != "sub_1TESTa1B2c3D4e5F6g7H8i9" || r.Subscriptions[0].Plan != "pro" || r.Subscriptions[0].Status != billing.StatusActive {
			t.Fatalf("subscriptions %+v", r.Subscriptions)
		}
		if r.Billing.Plan == nil || r.Billing.Plan.Key != "pro" {
			t.Fatalf("billing %+v", r.Billing)
		}
		var ids []string
		for _, e := range r.RecentEvents {
			ids = append(ids, e.ID)
			if e.ID == "evt_unmapped_for_user" && (e.ProcessingError == nil || !strings.Contains(*e.ProcessingError, "unmapped") || *e.Outcome != billing.OutcomeUnresolved) {
				t.Errorf("the unresolved event's reason: %v", e.ProcessingError)
			}
		}
		if strings.Join(ids, ",") != "evt_unmapped_for_user,evt_1TESTsubUpdated000000001" {
			t.Fatalf("recent events %v, want the user's two, newest first", ids)
		}

		// Each of the two lists exactly the events resolved to them (provider_events.user_id).
		for _, user := range []string{billingtest.FixtureUser, "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e60"} {
			r, err := h.Svc.Inspect(context.Background(), user)
			if err != nil {
				t.Fatal(err)
			}
			var listed []string
			for _, e := range r.RecentEvents {
				listed = append(listed, e.ID)
			}
			rows, err := d.Query("select provider_event_id from provider_events where user_id = $1 order by received_at desc, provider_event_id desc", user)
			if err != nil {
				t.Fatal(err)
			}
			var named []string
			for rows.Next() {
				var id string
				rows.Scan(&id)
				named = append(named, id)
			}
			rows.Close()
			if strings.Join(listed, ",") != strings.Join(named, ",") || len(named) == 0 {
				t.Errorf("users show %s lists %v, want the events resolved to them %v", user, listed, named)
			}
		}

		unseen, err := h.Svc.Inspect(context.Background(), "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f")
		if err != nil || len(unseen.Customers)+len(unseen.Subscriptions)+len(unseen.RecentEvents) != 0 || unseen.Billing.Plan.Key != "free" {
			t.Fatalf("a user never seen: %+v %v", unseen, err)
		}
	})
}
