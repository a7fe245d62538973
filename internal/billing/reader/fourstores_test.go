package reader_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/playstore/playstoretest"
	"github.com/tollgate/tollgate/internal/billing/webhooks"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// One user subscribed through all four providers gets one answer: the view every surface
// shows (/api/v1/me and the service API read View) and the operator's report agree, and the
// report lists each provider's subscription.
func TestOneUserOnFourProviders(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		chain := billingtest.NewChain(t)
		g := playstoretest.Start(t)
		h := billingtest.New(t, d, billingtest.WithAppStore(t, chain), billingtest.WithPlayStore(t, g))
		ctx := context.Background()
		ahead := billingtest.Now.Add(20 * 24 * time.Hour)

		h.MustSend(billing.ProviderWeb, billingtest.Fixture(t, "web/customer.subscription.created.json")) // billingtest.FixtureUser on pro
		h.MustSend(billing.ProviderMobile, billingtest.Fixture(t, "mobile/subscription_started.json"))
		n := billingtest.AppStoreNotification("four-as", "SUBSCRIBED", "INITIAL_BUY", "6001", billingtest.FixtureUser, billingtest.Now.Add(-time.Minute), ahead)
		if rec := h.SendAppStore(chain, n); rec.Code != http.StatusOK || rec.Header().Get(webhooks.HeaderOutcome) != billing.OutcomeApplied {
			t.Fatalf("app store: %d %q", rec.Code, rec.Header().Get(webhooks.HeaderOutcome))
		}
		g.SetPurchase("four-play", billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", billingtest.FixtureUser, ahead, "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"))
		if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("four-play-1", 4, "four-play")); rec.Code != http.StatusOK || rec.Header().Get(webhooks.HeaderOutcome) != billing.OutcomeApplied {
			t.Fatalf("play: %d %q", rec.Code, rec.Header().Get(webhooks.HeaderOutcome))
		}

		view, err := h.Svc.View(ctx, billingtest.FixtureUser)
		if err != nil {
			t.Fatal(err)
		}
		report, err := h.Svc.Inspect(ctx, billingtest.FixtureUser)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(view)
		b, _ := json.Marshal(report.Billing)
		if string(a) != string(b) || !view.Subscribed || view.Plan.Key != "pro" {
			t.Fatalf("the view %s and the report's %s differ, or are not pro", a, b)
		}
		var providers []string
		for _, s := range report.Subscriptions {
			providers = append(providers, s.Provider)
		}
		slices.Sort(providers)
		if want := []string{"appstore", "mobile", "playstore", "web"}; !slices.Equal(providers, want) {
			t.Fatalf("the report lists %v, want %v", providers, want)
		}
	})
}
