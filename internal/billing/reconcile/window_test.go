package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoretest"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// historyIn is the App Store's history catch-up in environment, over a stand-in whose
// clock runs ahead of tollgate's by ahead (the time a request takes to reach Apple, or a
// clock that differs), with the oldest stored App Store event a year old.
func historyIn(t *testing.T, d *db.DB, environment string, ahead time.Duration) (*billingtest.Harness, *appstoretest.API, *reconcile.History) {
	t.Helper()
	s, a, api := billingtest.AppStoreAPIIn(t, environment)
	s.Clock = func() time.Time { return billingtest.Now.Add(ahead) }
	h := billingtest.New(t, d, billingtest.WithAdapters(a))
	old := billingtest.AppStoreNotification("year-old", "SUBSCRIBED", "INITIAL_BUY", "7000009", billingtest.FixtureUser,
		billingtest.Now.Add(-3*time.Hour), billingtest.Now.Add(-2*time.Hour))
	old.Environment = environment
	body, err := s.Chain.SignedPayload(old)
	if err != nil {
		t.Fatal(err)
	}
	if rec := h.Post("/billing/webhooks/appstore", []byte(`{"signedPayload":"`+body+`"}`), nil); rec.Code != 200 {
		t.Fatalf("the year-old delivery: %d %s", rec.Code, rec.Body)
	}
	// Received a year ago (the test chain's certificates are younger than that, and so is
	// the signature they check).
	if _, err := d.Exec("update provider_events set received_at = $1", billingtest.Now.AddDate(-1, 0, 0)); err != nil {
		t.Fatal(err)
	}
	kept := map[string]time.Duration{"Production": 180 * 24 * time.Hour, "Sandbox": 30 * 24 * time.Hour}[environment]
	return h, s, reconcile.NewHistory(d, h.Svc.Pipeline, h.Log, reconcile.HistoryOptions{
		Provider: appstore.Provider, Environment: environment, MaxBack: kept, Read: api.NotificationHistory, Clock: h.Clock,
	})
}

// TestAFirstCatchUpStaysInsideTheStoresWindow: whose oldest stored event is a year old, a
// first catch-up asks from inside Apple's window (180 days, 30 in Sandbox) as Apple
// measures it when the request arrives, completes, says from when it read and why, and
// applies the notification it missed once. A stand-in whose clock is further ahead than
// the margin refuses the start (4000012); the read is asked again from a later start.
func TestAFirstCatchUpStaysInsideTheStoresWindow(t *testing.T) {
	for _, c := range []struct {
		environment string
		ahead       time.Duration
		note        string
	}{
		{"Production", 30 * time.Minute, "the store keeps 180 days of history"},
		{"Sandbox", 30 * time.Minute, "the store keeps 30 days of history"},
		{"Sandbox", 3 * time.Hour, "too far back"},
	} {
		t.Run(fmt.Sprint(c.environment, " ahead ", c.ahead), func(t *testing.T) {
			t.Parallel()
			d := dbtest.SQLite(t)
			h, s, hist := historyIn(t, d, c.environment, c.ahead)
			missed := billingtest.AppStoreNotification("missed-renewal", "DID_RENEW", "", "7000001", billingtest.FixtureUser,
				billingtest.Now.Add(-48*time.Hour), billingtest.Now.Add(28*24*time.Hour))
			missed.Environment = c.environment
			if _, err := s.Send(missed); err != nil {
				t.Fatal(err)
			}
			sum, err := hist.CatchUp(context.Background(), time.Time{}, pipeline.CatchUpOptions{})
			if err != nil || sum.Applied != 1 {
				t.Fatalf("the first catch-up: %+v %v", sum, err)
			}
			read, err := dbq.New(d).GetHistoryRead(context.Background(), dbq.GetHistoryReadParams{Provider: appstore.Provider, Environment: c.environment})
			if err != nil || read.NextPage.Valid || !strings.Contains(read.Note, c.note) || !read.Wanted.Equal(billingtest.Now.AddDate(-1, 0, 0)) {
				t.Fatalf("the read recorded: %+v %v; want complete, noting %q", read, err, c.note)
			}
			if !strings.Contains(h.Logs.String(), "caught up from the store's history") || !strings.Contains(h.Logs.String(), c.note) {
				t.Fatalf("the log does not say from when it read and why:\n%s", h.Logs.String())
			}
			if sum, err := hist.CatchUp(context.Background(), time.Time{}, pipeline.CatchUpOptions{}); err != nil || sum.Applied != 0 {
				t.Fatalf("a second catch-up: %+v %v, want nothing applied", sum, err)
			}
			if n := h.CountEvents(); n != 2 {
				t.Fatalf("%d events stored, want the year-old one and the missed one", n)
			}
		})
	}
}

// sendMany sends n renewals, a minute apart from an hour before billingtest.Now.
func sendMany(t *testing.T, s *appstoretest.API, n int) {
	t.Helper()
	for i := range n {
		r := billingtest.AppStoreNotification(fmt.Sprintf("many-%02d", i), "DID_RENEW", "", "7000002", billingtest.FixtureUser,
			billingtest.Now.Add(-time.Hour+time.Duration(i)*time.Minute), billingtest.Now.Add(30*24*time.Hour))
		if _, err := s.Send(r); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHistoryPagingIsChecked: a page token that repeats, or leads back to an earlier
// page, fails the read within a few requests; hasMore without a token fails the read
// (the window stays incomplete) and a later read gets every notification.
func TestHistoryPagingIsChecked(t *testing.T) {
	for _, how := range []string{"repeat", "cycle"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			_, s, hist := history(t, dbtest.SQLite(t))
			sendMany(t, s, 45)
			s.BreakPaging(how)
			_, err := hist.CatchUp(context.Background(), billingtest.Now.Add(-2*time.Hour), pipeline.CatchUpOptions{})
			if at, _ := s.Requests(); !errors.Is(err, billing.ErrHistoryPaging) || len(at) > 4 {
				t.Fatalf("%d requests, %v: want the read failed within a few requests", len(at), err)
			}
		})
	}
	t.Run("no token", func(t *testing.T) {
		t.Parallel()
		d := dbtest.SQLite(t)
		h, s, hist := history(t, d)
		sendMany(t, s, 45)
		s.BreakPaging("no token")
		if _, err := hist.CatchUp(context.Background(), billingtest.Now.Add(-2*time.Hour), pipeline.CatchUpOptions{}); !errors.Is(err, billing.ErrHistoryPaging) {
			t.Fatalf("hasMore without a token: %v", err)
		}
		if _, err := dbq.New(d).GetStoreHistory(context.Background(), dbq.GetStoreHistoryParams{Provider: appstore.Provider, Environment: "Production"}); err == nil {
			t.Fatal("a read that failed was marked complete")
		}
		sum, err := hist.CatchUp(context.Background(), time.Time{}, pipeline.CatchUpOptions{})
		if err != nil || h.CountEvents() != 45 {
			t.Fatalf("the later read: %+v %v, %d of 45 stored", sum, err, h.CountEvents())
		}
	})
}

// TestAnInterruptedCatchUpResumesWhereItStopped: a read cut short after its first page
// keeps its place; the next catch-up (of any process) reads the pages after it, not the
// first again, and the history is then complete.
func TestAnInterruptedCatchUpResumesWhereItStopped(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h, s, hist := history(t, d)
		sendMany(t, s, 45)
		ctx, cancel := context.WithCancel(context.Background())
		sum, err := hist.CatchUp(ctx, billingtest.Now.Add(-2*time.Hour), pipeline.CatchUpOptions{Progress: func(sum pipeline.CatchUpSummary) {
			if sum.Applied == 20 {
				cancel() // the first page is applied: stop before the second is read
			}
		}})
		if err == nil || sum.Applied != 20 || h.CountEvents() != 20 {
			t.Fatalf("cut short: %+v %v, %d stored", sum, err, h.CountEvents())
		}
		sum, err = hist.CatchUp(context.Background(), time.Time{}, pipeline.CatchUpOptions{})
		if err != nil || sum.Pages != 2 || sum.Applied != 25 || sum.Stored != 0 || h.CountEvents() != 45 {
			t.Fatalf("resumed: %+v %v, %d stored; want the two pages after the first", sum, err, h.CountEvents())
		}
		until, err := dbq.New(d).GetStoreHistory(context.Background(), dbq.GetStoreHistoryParams{Provider: appstore.Provider, Environment: "Production"})
		if err != nil || !until.Equal(billingtest.Now) {
			t.Fatalf("complete until %v %v, want the interrupted read's end", until, err)
		}
	})
}

// TestAResumedCatchUpReadsOnToNow: a read cut short before its first page was applied
// (a server stopped as it started one, or a store that refused it) is taken up by the next catch-up, which then reads
// on from the interrupted read's end to now: a notification sent after that end is
// applied in the same catch-up, and the history is complete up to now.
func TestAResumedCatchUpReadsOnToNow(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	h, s, hist := history(t, d)
	sendMany(t, s, 3)
	s.RefuseKeys(true) // the read is recorded as started, and no page is read
	if _, err := hist.CatchUp(context.Background(), billingtest.Now.Add(-2*time.Hour), pipeline.CatchUpOptions{}); err == nil {
		t.Fatal("a catch-up Apple refused succeeded")
	}
	s.RefuseKeys(false)
	later := billingtest.AppStoreNotification("after-the-end", "DID_RENEW", "", "7000002", billingtest.FixtureUser,
		billingtest.Now.Add(30*time.Minute), billingtest.Now.Add(30*24*time.Hour))
	if _, err := s.Send(later); err != nil {
		t.Fatal(err)
	}
	h.SetNow(billingtest.Now.Add(time.Hour))
	s.Clock = h.Clock
	sum, err := hist.CatchUp(context.Background(), time.Time{}, pipeline.CatchUpOptions{})
	if err != nil || h.CountEvents() != 4 || sum.Applied != 4 {
		t.Fatalf("resumed: %+v %v, %d of 4 stored", sum, err, h.CountEvents())
	}
	until, err := dbq.New(d).GetStoreHistory(context.Background(), dbq.GetStoreHistoryParams{Provider: appstore.Provider, Environment: "Production"})
	if err != nil || !until.Equal(billingtest.Now.Add(time.Hour)) {
		t.Fatalf("complete until %v %v, want now", until, err)
	}
}
