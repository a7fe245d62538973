package reconcile_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// A pass over the App Store reads every subscription tollgate knows that did not end
// more than 60 days ago from Get All Subscription Statuses and repairs what differs: a
// refund, a renewal turned off, a grace period, each as Apple states it. The drift is
// recorded and counted; a second pass finds none.
func TestAppStoreStatusesRepairDrift(t *testing.T) {
	day := 24 * time.Hour
	expires, grace, revoked := billingtest.Now.Add(30*day), billingtest.Now.Add(5*day), billingtest.Now.Add(-2*time.Hour)
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		s, a, api := billingtest.AppStoreAPI(t)
		h := billingtest.New(t, d, billingtest.WithAdapters(a))
		chain := s.Chain
		users := map[string]string{}
		for i, sub := range []string{"8200001", "8200002", "8200003", "8200004", "8200005", "8200006"} {
			users[sub] = userN(820 + i)
			n := billingtest.AppStoreNotification("st-"+sub, "SUBSCRIBED", "INITIAL_BUY", sub, users[sub], billingtest.Now.Add(-3*time.Hour), expires)
			if sub == "8200005" { // ended 90 days ago: not read again
				n.Signed, n.Transaction.Expires = billingtest.Now.Add(-120*day), billingtest.Now.Add(-90*day)
			}
			if rec := h.SendAppStore(chain, n); rec.Code != 200 {
				t.Fatalf("%s: %d %s", sub, rec.Code, rec.Body)
			}
		}
		status := func(sub string, code int, edit func(*appstoredev.Status)) {
			st := appstoredev.Status{Code: code, Signed: billingtest.Now, AutoRenew: true, Transaction: *billingtest.AppStoreNotification(
				"read", "", "", sub, users[sub], billingtest.Now, expires).Transaction}
			if edit != nil {
				edit(&st)
			}
			if err := s.SetStatus(st); err != nil {
				t.Fatal(err)
			}
		}
		status("8200001", appstore.StatusRevoked, func(st *appstoredev.Status) { st.Transaction.Revoked = revoked })
		status("8200002", appstore.StatusActive, func(st *appstoredev.Status) { st.AutoRenew = false })
		status("8200003", appstore.StatusGracePeriod, func(st *appstoredev.Status) {
			st.Transaction.Expires, st.GraceUntil = billingtest.Now.Add(-day), grace
		})
		status("8200004", appstore.StatusActive, nil) // as tollgate has it
		// A status signed by a chain Apple's roots do not sign.
		s.Chain = billingtest.NewChain(t)
		status("8200006", appstore.StatusExpired, nil)
		s.Chain = chain

		reg := prometheus.NewRegistry()
		read := func(ctx context.Context, id string, _ []byte) (json.RawMessage, error) {
			return api.ReadSubscription(ctx, id)
		}
		r := reconcile.New(d, h.Svc.Pipeline, h.Log, reconcile.Options{Provider: appstore.Provider, Registerer: reg, Clock: h.Clock,
			Read: reconcile.KnownSubscriptions(d, appstore.Provider, h.Clock, read)})
		res, err := r.Pass(context.Background(), false)
		if err != nil || res.Checked != 5 || res.Drifted != 3 || res.Repaired != 3 || res.Unresolved != 1 {
			t.Fatalf("first pass: %+v %v", res, err)
		}
		if !strings.Contains(h.Logs.String(), "subscription=8200006") {
			t.Fatalf("the forged status is not logged:\n%s", h.Logs.String())
		}
		for sub, want := range map[string]string{
			"8200001": "false refunded free " + billingtest.Stamp(revoked),
			"8200002": "true cancelled pro " + billingtest.Stamp(expires),
			"8200003": "true past_due pro " + billingtest.Stamp(grace),
			"8200004": "true active pro " + billingtest.Stamp(expires),
			"8200006": "true active pro " + billingtest.Stamp(expires), // the forgery changed nothing
		} {
			if got := h.Answer(t, users[sub]); got != want {
				t.Errorf("%s: %s, want %s", sub, got, want)
			}
		}
		if got := driftTotal(t, reg, appstore.Provider); got != 3 {
			t.Fatalf("drift counted %v, want 3", got)
		}
		var provider, drift string
		if err := d.QueryRow("select provider, drift from reconcile_runs order by id desc limit 1").Scan(&provider, &drift); err != nil ||
			provider != appstore.Provider || !containsAll(drift, "8200001: pro active", "→ pro refunded", "8200002: pro active", "→ pro cancelled", "8200003") {
			t.Fatalf("the run's record: %q %q %v", provider, drift, err)
		}
		h.SetNow(billingtest.Now.Add(time.Minute))
		if res, err := r.Pass(context.Background(), false); err != nil || res.Checked != 5 || res.Drifted != 0 {
			t.Fatalf("second pass: %+v %v", res, err)
		}
	})
}

// containsAll says whether s holds every one of parts.
func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
