package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/api/androidpublisher/v3"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/playstore"
	"github.com/tollgate/tollgate/internal/billing/playstore/playstoretest"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// A pass over Google Play reads the voided purchases, then every purchase token tollgate
// knows from subscriptionsv2: a void of the order that paid the period ends it as refunded
// (even though Play still reports the subscription running), a void of an earlier order is
// recorded only, drift is repaired; read again, nothing changes; a later paid order gives
// access back.
func TestPlayPassReadsVoidsAndSubscriptions(t *testing.T) {
	day := 24 * time.Hour
	ahead, voidedAt := billingtest.Now.Add(20*day), billingtest.Now.Add(-30*time.Minute)
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		g := playstoretest.Start(t)
		a := billingtest.PlayAdapter(t, g)
		h := billingtest.New(t, d, billingtest.WithAdapters(a))
		const active = "SUBSCRIPTION_STATE_ACTIVE"
		for i, token := range []string{"tok-void", "tok-drift", "tok-earlier"} {
			g.SetPurchase(token, billingtest.PlayOrder(active, userN(840+i), ahead, "GPA.84"+token[4:5]+"..1"))
			if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-"+token, 4, token)); rec.Code != 200 {
				t.Fatalf("%s: %d %s", token, rec.Code, rec.Body)
			}
		}
		g.Void(androidpublisher.VoidedPurchase{PurchaseToken: "tok-void", OrderId: "GPA.84v..1", VoidedTimeMillis: voidedAt.UnixMilli()})
		g.Void(androidpublisher.VoidedPurchase{PurchaseToken: "tok-earlier", OrderId: "GPA.84e..0", VoidedTimeMillis: voidedAt.UnixMilli()})
		g.Void(androidpublisher.VoidedPurchase{PurchaseToken: "tok-unknown", OrderId: "GPA.84u", VoidedTimeMillis: voidedAt.UnixMilli()})
		g.SetPurchase("tok-drift", billingtest.PlayOrder("SUBSCRIPTION_STATE_EXPIRED", userN(841), billingtest.Now.Add(-time.Hour), "GPA.84d..1"))

		reg := prometheus.NewRegistry()
		voids := reconcile.NewHistory(d, h.Svc.Pipeline, h.Log, reconcile.HistoryOptions{Provider: playstore.Provider, Environment: "voided",
			MaxBack: playstore.VoidedKept, Read: a.VoidedPurchases, Clock: h.Clock})
		r := reconcile.New(d, h.Svc.Pipeline, h.Log, reconcile.Options{Provider: playstore.Provider, Registerer: reg, Clock: h.Clock,
			Read: reconcile.KnownSubscriptions(d, playstore.Provider, h.Clock, a.ReadSubscription)})
		pass := func(name string, wantApplied, wantDrift int, want map[string]string) {
			t.Helper()
			h.SetNow(h.Clock().Add(time.Minute))
			sum, err := voids.CatchUp(context.Background(), billingtest.Now.Add(-day), pipeline.CatchUpOptions{})
			if err != nil || sum.Applied != wantApplied || sum.Read != 3 {
				t.Fatalf("%s: voids %+v %v", name, sum, err)
			}
			res, err := r.Pass(context.Background(), false)
			if err != nil || res.Checked != 3 || res.Drifted != wantDrift {
				t.Fatalf("%s: pass %+v %v", name, res, err)
			}
			for user, answer := range want {
				if got := h.Answer(t, user); got != answer {
					t.Errorf("%s: %s: %s, want %s", name, user, got, answer)
				}
			}
		}
		want := map[string]string{
			userN(840): "false refunded free " + billingtest.Stamp(voidedAt),
			userN(841): "false expired free " + billingtest.Stamp(billingtest.Now.Add(-time.Hour)),
			userN(842): "true active pro " + billingtest.Stamp(ahead),
		}
		pass("first", 3, 1, want)
		if n := h.CountRows("provider_events where provider_event_id like 'void:%'"); n != 3 {
			t.Fatalf("%d voids stored, want 3 (each once)", n)
		}
		pass("again", 0, 0, want)
		g.SetPurchase("tok-void", billingtest.PlayOrder(active, userN(840), ahead.Add(30*day), "GPA.84v..2"))
		want[userN(840)] = "true active pro " + billingtest.Stamp(ahead.Add(30*day))
		pass("renewed", 0, 1, want)
	})
}

// TestPlayRidesOutGooglesLimits: a 429 (Retry-After: 1) on the first subscriptionsv2 read
// of a pass over three tokens, and a 503 on the voided list, are waited out: the catch-up
// and the pass complete, the drift is repaired and all three are checked. A start older
// than the 30 days Google keeps is read from inside them, saying so.
func TestPlayRidesOutGooglesLimits(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	g := playstoretest.Start(t)
	a := billingtest.PlayAdapter(t, g)
	h := billingtest.New(t, d, billingtest.WithAdapters(a))
	ahead := billingtest.Now.Add(20 * 24 * time.Hour)
	for i, token := range []string{"tok-a", "tok-b", "tok-c"} {
		g.SetPurchase(token, billingtest.PlayOrder("SUBSCRIPTION_STATE_ACTIVE", userN(850+i), ahead, "GPA.85"+token[4:]+"..1"))
		if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-"+token, 4, token)); rec.Code != 200 {
			t.Fatalf("%s: %d %s", token, rec.Code, rec.Body)
		}
	}
	for _, token := range []string{"tok-a", "tok-b", "tok-c"} {
		g.SetPurchase(token, billingtest.PlayOrder("SUBSCRIPTION_STATE_EXPIRED", userN(850+int(token[4]-'a')), billingtest.Now.Add(-time.Hour), "GPA.85"+token[4:]+"..1"))
	}
	g.Void(androidpublisher.VoidedPurchase{PurchaseToken: "tok-x", OrderId: "GPA.85x", VoidedTimeMillis: billingtest.Now.Add(-time.Hour).UnixMilli()})
	g.FailNext(playstoretest.CallVoided, playstoretest.Failure{Status: 503})
	g.FailNext(playstoretest.CallSubscription, playstoretest.Failure{Status: 429, RetryAfter: "1"})

	voids := reconcile.NewHistory(d, h.Svc.Pipeline, h.Log, reconcile.HistoryOptions{Provider: playstore.Provider, Environment: "voided",
		MaxBack: playstore.VoidedKept, Read: a.VoidedPurchases, Clock: h.Clock})
	sum, err := voids.CatchUp(context.Background(), billingtest.Now.Add(-60*24*time.Hour), pipeline.CatchUpOptions{})
	if err != nil || sum.Read != 1 {
		t.Fatalf("the voided list after a 503, from 60 days back: %+v %v", sum, err)
	}
	if !strings.Contains(h.Logs.String(), "the store keeps 30 days of history") {
		t.Fatalf("the catch-up does not say it read from 30 days back:\n%s", h.Logs.String())
	}
	r := reconcile.New(d, h.Svc.Pipeline, h.Log, reconcile.Options{Provider: playstore.Provider, Clock: h.Clock,
		Read: reconcile.KnownSubscriptions(d, playstore.Provider, h.Clock, a.ReadSubscription)})
	h.SetNow(billingtest.Now.Add(time.Minute)) // a read after the pushes' reads
	started := time.Now()
	res, err := r.Pass(context.Background(), false)
	if err != nil || res.Checked != 3 || res.Repaired != 3 || res.Failed != 0 {
		t.Fatalf("a pass after a 429: %+v %v", res, err)
	}
	if waited := time.Since(started); waited < time.Second {
		t.Fatalf("the pass took %v: the 429's Retry-After of a second was not waited out", waited)
	}
}

// TestPlayVoidedPagingIsChecked: a voided list whose page token repeats fails the read
// within a few requests.
func TestPlayVoidedPagingIsChecked(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	g := playstoretest.Start(t)
	a := billingtest.PlayAdapter(t, g)
	h := billingtest.New(t, d, billingtest.WithAdapters(a))
	for i := range 7 {
		g.Void(androidpublisher.VoidedPurchase{PurchaseToken: fmt.Sprint("tok-", i), OrderId: fmt.Sprint("GPA.86", i),
			VoidedTimeMillis: billingtest.Now.Add(-time.Duration(i+1) * time.Minute).UnixMilli()})
	}
	g.BreakVoidedPaging("repeat")
	voids := reconcile.NewHistory(d, h.Svc.Pipeline, h.Log, reconcile.HistoryOptions{Provider: playstore.Provider, Environment: "voided",
		MaxBack: playstore.VoidedKept, Read: a.VoidedPurchases, Clock: h.Clock})
	sum, err := voids.CatchUp(context.Background(), billingtest.Now.Add(-time.Hour), pipeline.CatchUpOptions{})
	if !errors.Is(err, billing.ErrHistoryPaging) || sum.Pages > 3 {
		t.Fatalf("a repeating page token: %+v %v", sum, err)
	}
}
