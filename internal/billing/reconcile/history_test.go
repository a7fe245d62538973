package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoretest"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// history is the App Store's history catch-up over the stand-in for its server API, at
// billingtest.Now.
func history(t *testing.T, d *db.DB) (*billingtest.Harness, *appstoretest.API, *reconcile.History) {
	t.Helper()
	s, a, api := billingtest.AppStoreAPI(t)
	h := billingtest.New(t, d, billingtest.WithAdapters(a))
	return h, s, reconcile.NewHistory(d, h.Svc.Pipeline, h.Log, reconcile.HistoryOptions{
		Provider: appstore.Provider, Environment: "Production", MaxBack: 180 * 24 * time.Hour, Read: api.NotificationHistory, Clock: h.Clock,
	})
}

// TestHistoryStartsWhereItLeftOff: the first read starts at the earliest stored App Store
// notification (or now); a complete read moves the start to ten minutes before its end; a
// dry run does not; nothing starts before the store's history does.
func TestHistoryStartsWhereItLeftOff(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h, s, hist := history(t, d)
		ctx := context.Background()
		start := func(since time.Time) time.Time {
			t.Helper()
			at, err := hist.Start(ctx, since)
			if err != nil {
				t.Fatal(err)
			}
			return at.UTC()
		}
		if got := start(time.Time{}); !got.Equal(billingtest.Now) {
			t.Fatalf("nothing stored: starts %v, want now", got)
		}
		if got := start(billingtest.Now.AddDate(-1, 0, 0)); !got.Equal(billingtest.Now.AddDate(-1, 0, 0)) {
			t.Fatalf("a year back: wants %v, want a year back (the read keeps inside the store's window)", got)
		}
		h.SetNow(billingtest.Now.Add(-48 * time.Hour)) // the first notification arrives two days ago
		n := billingtest.AppStoreNotification("h-1", "SUBSCRIBED", "INITIAL_BUY", "6000001", billingtest.FixtureUser, billingtest.Now.Add(-48*time.Hour), billingtest.Now.Add(24*time.Hour))
		body, err := s.Send(n)
		if err != nil {
			t.Fatal(err)
		}
		if rec := h.Post("/billing/webhooks/appstore", body, nil); rec.Code != 200 {
			t.Fatalf("delivery: %d", rec.Code)
		}
		h.SetNow(billingtest.Now)
		if got := start(time.Time{}); !got.Equal(billingtest.Now.Add(-48 * time.Hour)) {
			t.Fatalf("one stored two days ago: starts %v", got)
		}
		renewed := billingtest.AppStoreNotification("h-2", "DID_RENEW", "", "6000001", billingtest.FixtureUser, billingtest.Now.Add(-time.Hour), billingtest.Now.Add(30*24*time.Hour))
		if _, err := s.Send(renewed); err != nil {
			t.Fatal(err)
		}
		if sum, err := hist.CatchUp(ctx, time.Time{}, pipeline.CatchUpOptions{DryRun: true}); err != nil || sum.Applied != 1 {
			t.Fatalf("dry run: %+v %v", sum, err)
		}
		if got := start(time.Time{}); !got.Equal(billingtest.Now.Add(-48 * time.Hour)) {
			t.Fatalf("after a dry run: starts %v, want where it did", got)
		}
		if sum, err := hist.CatchUp(ctx, time.Time{}, pipeline.CatchUpOptions{}); err != nil || sum.Applied != 1 || sum.Stored != 1 {
			t.Fatalf("catch-up: %+v %v", sum, err)
		}
		if got := h.Answer(t, billingtest.FixtureUser); got != "true active pro "+billingtest.Stamp(billingtest.Now.Add(30*24*time.Hour)) {
			t.Fatalf("after the catch-up: %s", got)
		}
		if got := start(time.Time{}); !got.Equal(billingtest.Now.Add(-10 * time.Minute)) {
			t.Fatalf("after a complete read: starts %v, want ten minutes before its end", got)
		}
	})
}

// TestHistoryIsReadByOneProcessAtATime: while another process holds the App Store's lease,
// a catch-up is skipped with ErrBusy and applies nothing.
func TestHistoryIsReadByOneProcessAtATime(t *testing.T) {
	d := dbtest.SQLite(t)
	h, s, hist := history(t, d)
	n := billingtest.AppStoreNotification("busy-1", "SUBSCRIBED", "INITIAL_BUY", "6000002", billingtest.FixtureUser, billingtest.Now.Add(-time.Hour), billingtest.Now.Add(time.Hour))
	if _, err := s.Send(n); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec("insert into reconcile_leases (provider, holder, lease_until) values ('appstore history Production', 'another process', $1)", time.Now().Add(time.Hour).UTC()); err != nil {
		t.Fatal(err)
	}
	if _, err := hist.CatchUp(context.Background(), billingtest.Now.Add(-2*time.Hour), pipeline.CatchUpOptions{}); !errors.Is(err, reconcile.ErrBusy) || h.CountEvents() != 0 {
		t.Fatalf("beside another process's lease: %v, %d stored", err, h.CountEvents())
	}
}
