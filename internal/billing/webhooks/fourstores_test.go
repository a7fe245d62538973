package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/playstore/playstoretest"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// One user subscribed through all four providers gets one answer: the view every surface
// shows (/api/v1/me and the service API read View) and the operator's report agree, and the
// report lists each provider's subscription.
func TestOneUserOnFourProviders(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		chain := newChain(t)
		g := playstoretest.Start(t)
		h := newHarness(t, d, withAppStore(t, chain), withPlayStore(t, g))
		ctx := context.Background()
		ahead := fixtureNow.Add(20 * 24 * time.Hour)

		h.mustSend(billing.ProviderWeb, fixture(t, "web/customer.subscription.created.json")) // fixtureUser on pro
		h.mustSend(billing.ProviderMobile, fixture(t, "mobile/subscription_started.json"))
		n := appStoreNotification("four-as", "SUBSCRIBED", "INITIAL_BUY", "6001", fixtureUser, fixtureNow.Add(-time.Minute), ahead)
		if rec := h.sendAppStore(chain, n); rec.Code != http.StatusOK || rec.Header().Get(HeaderOutcome) != billing.OutcomeApplied {
			t.Fatalf("app store: %d %q", rec.Code, rec.Header().Get(HeaderOutcome))
		}
		g.SetPurchase("four-play", playPurchase("SUBSCRIPTION_STATE_ACTIVE", fixtureUser, ahead, "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"))
		if rec := h.sendPlay(g.PushToken(pushClaims(), nil), subscriptionPush("four-play-1", 4, "four-play")); rec.Code != http.StatusOK || rec.Header().Get(HeaderOutcome) != billing.OutcomeApplied {
			t.Fatalf("play: %d %q", rec.Code, rec.Header().Get(HeaderOutcome))
		}

		view, err := h.svc.View(ctx, fixtureUser)
		if err != nil {
			t.Fatal(err)
		}
		report, err := h.svc.Inspect(ctx, fixtureUser)
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
