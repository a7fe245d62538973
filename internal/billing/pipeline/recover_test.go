package pipeline_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoretest"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// appStoreHistory is the App Store with the stand-in for its server API, and a reader of
// the stand-in's notification history of the day before billingtest.Now.
func appStoreHistory(t *testing.T, d *db.DB) (*billingtest.Harness, *appstoretest.API, pipeline.HistoryReader) {
	t.Helper()
	s, a, api := billingtest.AppStoreAPI(t)
	read := func(ctx context.Context, page string) (billing.HistoryPage, error) {
		return api.NotificationHistory(ctx, billingtest.Now.Add(-24*time.Hour), billingtest.Now, page)
	}
	return billingtest.New(t, d, billingtest.WithAdapters(a)), s, read
}

// TestCatchUpAppliesMissedNotificationsOnce: notifications sent while tollgate did not hear
// them — renewals, a refund, an expiry — are applied from the history in the order Apple
// signed them, as if delivered; the one that was delivered is left as it is; a forged item
// changes nothing; a second catch-up applies nothing.
func TestCatchUpAppliesMissedNotificationsOnce(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h, s, read := appStoreHistory(t, d)
		const user, sub = "00000000-0000-4000-8000-000000000c01", "5000001"
		at := func(hours int) time.Time { return billingtest.Now.Add(time.Duration(hours) * time.Hour) }
		subscribed := billingtest.AppStoreNotification("catch-1", "SUBSCRIBED", "INITIAL_BUY", sub, user, at(-3), at(30*24))
		renewed := billingtest.AppStoreNotification("catch-2", "DID_RENEW", "", sub, user, at(-2), at(60*24))
		refunded := billingtest.AppStoreNotification("catch-3", "REFUND", "", sub, user, at(-1), at(60*24))
		const other, lapsed = "00000000-0000-4000-8000-000000000c02", "5000003"
		bought := billingtest.AppStoreNotification("catch-4", "SUBSCRIBED", "INITIAL_BUY", lapsed, other, at(-6), at(-5))
		expired := billingtest.AppStoreNotification("catch-5", "EXPIRED", "VOLUNTARY", lapsed, other, at(-4), at(-5))
		// The history's order is not Apple's signing order.
		for _, n := range []appstoredev.Notification{expired, subscribed, refunded, renewed, bought} {
			if _, err := s.Send(n); err != nil {
				t.Fatal(err)
			}
		}
		if rec := h.SendAppStore(s.Chain, subscribed); rec.Code != http.StatusOK {
			t.Fatalf("the delivered notification: %d", rec.Code)
		}
		delivered := h.Event(t, appstore.Provider, "catch-1")
		forged, err := billingtest.NewChain(t).SignedPayload(billingtest.AppStoreNotification("catch-forged", "DID_RENEW", "", sub, user, at(-1), at(90*24)))
		if err != nil {
			t.Fatal(err)
		}
		s.AddHistory(forged)

		outcomes := map[string]string{}
		sum, err := h.Svc.CatchUp(context.Background(), appstore.Provider, read, pipeline.CatchUpOptions{Report: func(id, outcome string) { outcomes[id] = outcome }})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fmt.Sprint(outcomes), "map[catch-1:duplicate catch-2:applied catch-3:applied catch-4:applied catch-5:applied]"; got != want {
			t.Fatalf("outcomes %s, want %s (in signing order, the delivered one skipped)", got, want)
		}
		if sum != (pipeline.CatchUpSummary{Pages: 1, Read: 5, Applied: 4, Stored: 1, Refused: 1}) {
			t.Fatalf("summary %+v", sum)
		}
		if got, want := h.Answer(t, user), "false refunded free "+billingtest.Stamp(at(-1)); got != want {
			t.Fatalf("after the catch-up: %s, want %s", got, want)
		}
		if got, want := h.Answer(t, other), "false expired free "+billingtest.Stamp(at(-4)); got != want {
			t.Fatalf("the lapsed subscription after the catch-up: %s, want %s", got, want)
		}
		if again := h.Event(t, appstore.Provider, "catch-1"); fmt.Sprint(again) != fmt.Sprint(delivered) {
			t.Fatalf("the delivered notification's row changed:\n%+v\n%+v", delivered, again)
		}
		if h.CountEvents() != 5 {
			t.Fatalf("%d events stored, want 5", h.CountEvents())
		}

		before := h.DumpTables("provider_events", "subscriptions")
		outcomes = map[string]string{}
		sum, err = h.Svc.CatchUp(context.Background(), appstore.Provider, read, pipeline.CatchUpOptions{Report: func(id, outcome string) { outcomes[id] = outcome }})
		if err != nil || sum.Applied != 0 || sum.Stored != 5 {
			t.Fatalf("a second catch-up: %+v %v %v", sum, outcomes, err)
		}
		if after := h.DumpTables("provider_events", "subscriptions"); after != before {
			t.Fatalf("a second catch-up changed rows:\n%s\n%s", before, after)
		}
	})
}

// TestCatchUpDryRunAppliesNothing: a dry run reports what it would apply and stores nothing.
func TestCatchUpDryRunAppliesNothing(t *testing.T) {
	h, s, read := appStoreHistory(t, dbtest.SQLite(t))
	n := billingtest.AppStoreNotification("dry-1", "SUBSCRIBED", "INITIAL_BUY", "5000002", billingtest.FixtureUser, billingtest.Now.Add(-time.Hour), billingtest.Now.Add(time.Hour))
	if _, err := s.Send(n); err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]string{}
	sum, err := h.Svc.CatchUp(context.Background(), appstore.Provider, read, pipeline.CatchUpOptions{DryRun: true, Report: func(id, outcome string) { outcomes[id] = outcome }})
	if err != nil || sum.Applied != 1 || outcomes["dry-1"] != "would apply" || h.CountEvents() != 0 {
		t.Fatalf("dry run: %+v %v %v, %d stored", sum, outcomes, err, h.CountEvents())
	}
}
