package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/playstore"
	"github.com/tollgate/tollgate/internal/billing/playstore/playstoretest"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// quietTables are what a pass that finds every subscription as stored must not write.
var quietTables = []string{"provider_subscriptions", "subscriptions"}

// TestAPassThatFindsNothingWritesNothing: after a pass that repairs, two more passes leave
// the subscriptions' rows byte for byte as they were, for the App Store and for Google
// Play, though each read is later than the last.
func TestAPassThatFindsNothingWritesNothing(t *testing.T) {
	t.Run("appstore", func(t *testing.T) {
		t.Parallel()
		s := newAppleStores(t, "Production")
		s.subscribe(t, "Production", "9200001", appstore.StatusExpired)
		s.subscribe(t, "Production", "9200002", appstore.StatusActive)
		quietly(t, s.h, s.reconciler(), 2) // expired; and renewal off
	})
	t.Run("playstore", func(t *testing.T) {
		t.Parallel()
		dbtest.Engines(t, func(t *testing.T, d *db.DB) {
			g := playstoretest.Start(t)
			a := billingtest.PlayAdapter(t, g)
			h := billingtest.New(t, d, billingtest.WithAdapters(a))
			ahead := billingtest.Now.Add(20 * 24 * time.Hour)
			for i, token := range []string{"tok-q1", "tok-q2"} {
				g.SetPurchase(token, billingtest.PlayOrder("SUBSCRIPTION_STATE_ACTIVE", userN(870+i), ahead, "GPA.87"+token[5:]+"..1"))
				if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-"+token, 4, token)); rec.Code != 200 {
					t.Fatalf("%s: %d %s", token, rec.Code, rec.Body)
				}
			}
			g.SetPurchase("tok-q1", billingtest.PlayOrder("SUBSCRIPTION_STATE_EXPIRED", userN(870), billingtest.Now.Add(-time.Hour), "GPA.87q1..1"))
			quietly(t, h, reconcile.New(d, h.Svc.Pipeline, h.Log, reconcile.Options{Provider: playstore.Provider, Clock: h.Clock,
				Read: reconcile.KnownSubscriptions(d, playstore.Provider, h.Clock, a.ReadSubscription)}), 1)

			// A read that found the purchase as stored still counts as the latest read: a
			// push read before it, with what Google said then, is older and changes nothing.
			before := h.Answer(t, userN(871))
			h.SetNow(billingtest.Now.Add(90 * time.Second)) // after the first pass's read, before the third's
			g.SetPurchase("tok-q2", billingtest.PlayOrder("SUBSCRIPTION_STATE_CANCELED", userN(871), ahead, "GPA.87q2..1"))
			if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-late", 4, "tok-q2")); rec.Code != 200 {
				t.Fatalf("the late push: %d %s", rec.Code, rec.Body)
			}
			if got := h.Answer(t, userN(871)); got != before {
				t.Fatalf("a read older than the latest pass's changed the answer: %s, was %s", got, before)
			}
		})
	})
}

// quietly runs a pass that repairs drifted subscriptions, then two more, each a minute
// later, and checks that the two write nothing.
func quietly(t *testing.T, h *billingtest.Harness, r *reconcile.Reconciler, drifted int) {
	t.Helper()
	h.SetNow(billingtest.Now.Add(time.Minute))
	if res, err := r.Pass(context.Background(), false); err != nil || res.Repaired != drifted {
		t.Fatalf("the repairing pass: %+v %v", res, err)
	}
	after := h.DumpTables(quietTables...)
	for i := range 2 {
		h.SetNow(billingtest.Now.Add(time.Duration(2+i) * time.Minute))
		if res, err := r.Pass(context.Background(), false); err != nil || res.Drifted != 0 || res.Checked == 0 {
			t.Fatalf("pass %d after the repair: %+v %v", i+1, res, err)
		}
		if got := h.DumpTables(quietTables...); got != after {
			t.Fatalf("pass %d after the repair rewrote rows:\n%s\nwas\n%s", i+1, got, after)
		}
	}
}
