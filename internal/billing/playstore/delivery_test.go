package playstore_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/androidpublisher/v3"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/playstore"
	"github.com/tollgate/tollgate/internal/billing/playstore/playstoretest"
	"github.com/tollgate/tollgate/internal/billing/webhooks"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// Each state Google reports reaches the billing answer as the states table says
// (docs/providers.md, "Google Play"); a revocation refunds.
func TestPlayStatesReachTheAnswer(t *testing.T) {
	ahead := billingtest.Now.Add(30 * 24 * time.Hour)
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		g := playstoretest.Start(t)
		h := billingtest.New(t, d, billingtest.WithPlayStore(t, g))
		for i, tc := range []struct {
			state string
			want  string
		}{
			{"SUBSCRIPTION_STATE_ACTIVE", "true active pro " + billingtest.Stamp(ahead)},
			{"SUBSCRIPTION_STATE_IN_GRACE_PERIOD", "true past_due pro " + billingtest.Stamp(ahead)},
			{"SUBSCRIPTION_STATE_CANCELED", "true cancelled pro " + billingtest.Stamp(ahead)},
			{"SUBSCRIPTION_STATE_ON_HOLD", "false past_due free"},
			{"SUBSCRIPTION_STATE_PAUSED", "false past_due free"},
			{"SUBSCRIPTION_STATE_PENDING", "false past_due free"},
			{"SUBSCRIPTION_STATE_EXPIRED", "false expired free"},
			{"SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED", "false expired free"},
		} {
			user := fmt.Sprintf("00000000-0000-4000-8000-%012d", 910+i)
			token := fmt.Sprintf("tok-state-%d", i)
			g.SetPurchase(token, billingtest.PlayPurchase(tc.state, user, ahead, "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"))
			if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-state-"+token, 2, token)); rec.Code != http.StatusOK || rec.Header().Get(webhooks.HeaderOutcome) != billing.OutcomeApplied {
				t.Fatalf("%s: %d %q %s", tc.state, rec.Code, rec.Header().Get(webhooks.HeaderOutcome), rec.Body)
			}
			if got := h.Answer(t, user); !strings.HasPrefix(got, tc.want) {
				t.Errorf("%s: %s, want %s…", tc.state, got, tc.want)
			}
		}
		user := "00000000-0000-4000-8000-000000000950"
		g.SetPurchase("tok-revoked", billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", user, ahead, "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"))
		h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-rev-1", 4, "tok-revoked"))
		revocation := playstoretest.Push("m-rev-2", map[string]any{"packageName": billingtest.Bundle, "eventTimeMillis": fmt.Sprint(billingtest.Now.Add(time.Hour).UnixMilli()),
			"subscriptionNotification": map[string]any{"notificationType": 12, "purchaseToken": "tok-revoked"}})
		if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), revocation); rec.Code != http.StatusOK {
			t.Fatalf("revocation: %d", rec.Code)
		}
		if got := h.Answer(t, user); !strings.HasPrefix(got, "false refunded free") {
			t.Fatalf("after the revocation: %s", got)
		}
		voidedUser := "00000000-0000-4000-8000-000000000951"
		g.SetPurchase("tok-voided", billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", voidedUser, ahead, "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"))
		h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-void-1", 4, "tok-voided"))
		voided := playstoretest.Push("m-void-2", map[string]any{"packageName": billingtest.Bundle, "eventTimeMillis": fmt.Sprint(billingtest.Now.Add(time.Hour).UnixMilli()),
			"voidedPurchaseNotification": map[string]any{"purchaseToken": "tok-voided", "orderId": "GPA.1", "productType": 1, "refundType": 1}})
		if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), voided); rec.Code != http.StatusOK {
			t.Fatalf("voided: %d", rec.Code)
		}
		if got := h.Answer(t, voidedUser); !strings.HasPrefix(got, "false refunded free") {
			t.Fatalf("after the voided purchase: %s", got)
		}
	})
}

// Google down: 503 and nothing stored; once it is back, the retry applies. A purchase to
// acknowledge is acknowledged once, however often it is delivered; a token Google does not
// know is stored as unresolved; the test notification is stored and changes nothing.
func TestPlayReadsAndAcknowledges(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		g := playstoretest.Start(t)
		h := billingtest.New(t, d, billingtest.WithPlayStore(t, g))
		user := "00000000-0000-4000-8000-000000000960"
		g.SetPurchase("tok-ack", billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", user, billingtest.Now.Add(24*time.Hour), "ACKNOWLEDGEMENT_STATE_PENDING"))
		push := billingtest.SubscriptionPush("m-ack", 4, "tok-ack")
		g.SetDown(true)
		if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), push); rec.Code != http.StatusServiceUnavailable || h.CountEvents() != 0 {
			t.Fatalf("Google down: %d with %d stored, want 503 and none", rec.Code, h.CountEvents())
		}
		g.SetDown(false)
		for i := range 3 {
			if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), push); rec.Code != http.StatusOK {
				t.Fatalf("delivery %d: %d %s", i, rec.Code, rec.Body)
			}
		}
		if got := h.Answer(t, user); !strings.HasPrefix(got, "true active pro") || g.Acks("tok-ack") != 1 {
			t.Fatalf("after the deliveries: %s, acknowledged %d times, want once", got, g.Acks("tok-ack"))
		}
		// One line item is acknowledged naming its product; a subscription with add-ons
		// names none of them ("-"), as Google advises since May 2025.
		if as := g.AckedAs("tok-ack"); as != "com.example.app.pro.monthly" {
			t.Fatalf("one line item acknowledged as %q", as)
		}
		addOns := billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", user, billingtest.Now.Add(24*time.Hour), "ACKNOWLEDGEMENT_STATE_PENDING")
		addOns.LineItems = append(addOns.LineItems, &androidpublisher.SubscriptionPurchaseLineItem{ProductId: "com.example.app.storage", ExpiryTime: addOns.LineItems[0].ExpiryTime})
		g.SetPurchase("tok-addons", addOns)
		if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-addons", 4, "tok-addons")); rec.Code != http.StatusOK || g.AckedAs("tok-addons") != "-" {
			t.Fatalf("with an add-on: %d, acknowledged as %q, want -", rec.Code, g.AckedAs("tok-addons"))
		}
		if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-unknown", 4, "tok-nobody")); rec.Code != http.StatusOK || rec.Header().Get(webhooks.HeaderOutcome) != billing.OutcomeUnresolved {
			t.Fatalf("an unknown token: %d %q", rec.Code, rec.Header().Get(webhooks.HeaderOutcome))
		}
		test := playstoretest.Push("m-test", map[string]any{"packageName": billingtest.Bundle, "eventTimeMillis": "1", "testNotification": map[string]any{"version": "1.0"}})
		if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), test); rec.Code != http.StatusOK || rec.Header().Get(webhooks.HeaderOutcome) != billing.OutcomeIgnored {
			t.Fatalf("the test notification: %d %q", rec.Code, rec.Header().Get(webhooks.HeaderOutcome))
		}
		if n := h.CountEvents(); n != 4 {
			t.Fatalf("%d events stored, want 4", n)
		}
	})
}

// An upgrade's purchase names the one it replaces (linkedPurchaseToken): that one ends, so
// the user keeps one live subscription, not two.
func TestPlayUpgradeEndsTheReplacedPurchase(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		g := playstoretest.Start(t)
		h := billingtest.New(t, d, billingtest.WithPlayStore(t, g))
		user := "00000000-0000-4000-8000-000000000970"
		ahead := billingtest.Now.Add(30 * 24 * time.Hour)
		g.SetPurchase("tok-basic", billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", user, ahead, "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"))
		h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-basic", 4, "tok-basic"))
		upgrade := billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", user, ahead.Add(time.Hour), "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
		upgrade.LinkedPurchaseToken = "tok-basic"
		g.SetPurchase("tok-upgrade", upgrade)
		h.SetNow(billingtest.Now.Add(time.Minute))
		if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-upgrade", 4, "tok-upgrade")); rec.Code != http.StatusOK {
			t.Fatalf("the upgrade: %d %s", rec.Code, rec.Body)
		}
		old, current := h.Canonical(playstore.Provider, "tok-basic"), h.Canonical(playstore.Provider, "tok-upgrade")
		if old == nil || old.Status != billing.StatusExpired || current == nil || current.Status != billing.StatusActive {
			t.Fatalf("after the upgrade: replaced %+v, current %+v", old, current)
		}
		if got := h.Answer(t, user); got != "true active pro "+billingtest.Stamp(ahead.Add(time.Hour)) {
			t.Fatalf("the answer: %s", got)
		}
	})
}

// A one-time product is read from Google and entitles for good, as the mobile provider's
// non-subscription purchases do; it is acknowledged once, and a cancelled one refunds.
func TestPlayOneTimeProducts(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		g := playstoretest.Start(t)
		h := billingtest.New(t, d, billingtest.WithPlayStore(t, g))
		user := "00000000-0000-4000-8000-000000000980"
		g.SetProduct("tok-lifetime", &androidpublisher.ProductPurchase{PurchaseState: 0, AcknowledgementState: 0, ObfuscatedExternalAccountId: user})
		push := playstoretest.Push("m-life", map[string]any{"packageName": billingtest.Bundle, "eventTimeMillis": fmt.Sprint(billingtest.Now.UnixMilli()),
			"oneTimeProductNotification": map[string]any{"notificationType": 1, "purchaseToken": "tok-lifetime", "sku": "pro_subscription"}})
		for range 2 {
			if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), push); rec.Code != http.StatusOK {
				t.Fatalf("one-time product: %d %s", rec.Code, rec.Body)
			}
		}
		if got := h.Answer(t, user); got != "true active pro none" || g.Acks("tok-lifetime") != 1 {
			t.Fatalf("after the purchase: %s, acknowledged %d times", got, g.Acks("tok-lifetime"))
		}
		g.SetProduct("tok-lifetime", &androidpublisher.ProductPurchase{PurchaseState: 1, AcknowledgementState: 1, ObfuscatedExternalAccountId: user})
		h.SetNow(billingtest.Now.Add(time.Minute))
		cancelled := playstoretest.Push("m-life-2", map[string]any{"packageName": billingtest.Bundle, "eventTimeMillis": fmt.Sprint(billingtest.Now.Add(time.Minute).UnixMilli()),
			"oneTimeProductNotification": map[string]any{"notificationType": 2, "purchaseToken": "tok-lifetime", "sku": "pro_subscription"}})
		if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), cancelled); rec.Code != http.StatusOK {
			t.Fatalf("cancelled: %d", rec.Code)
		}
		if got := h.Answer(t, user); !strings.HasPrefix(got, "false refunded free") {
			t.Fatalf("after the cancellation: %s", got)
		}
	})
}

// A Play subscription keeps what its plan renews at (autoRenewingPlan.recurringPrice) in the
// currency's minor unit; Play does not say the billing period, which stays unknown. The
// event is stored with what it did: applied, for its user, from nothing to Pro.
func TestPlayKeepsTheRecurringPrice(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		g := playstoretest.Start(t)
		h := billingtest.New(t, d, billingtest.WithPlayStore(t, g))
		user := "00000000-0000-4000-8000-000000000950"
		p := billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", user, billingtest.Now.Add(30*24*time.Hour), "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
		p.LineItems[0].AutoRenewingPlan = &androidpublisher.AutoRenewingPlan{RecurringPrice: &androidpublisher.Money{CurrencyCode: "JPY", Units: 1200}}
		g.SetPurchase("tok-price", p)
		if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-price", 4, "tok-price")); rec.Code != http.StatusOK {
			t.Fatalf("push: %d %s", rec.Code, rec.Body)
		}
		var amount int64
		var currency string
		var period sql.NullString
		if err := h.DB.QueryRow("select amount, currency, billing_period from provider_subscriptions where provider = 'playstore'").Scan(&amount, &currency, &period); err != nil {
			t.Fatal(err)
		}
		if amount != 1200 || currency != "jpy" || period.Valid { // yen has no minor unit
			t.Fatalf("price %d %s %v, want 1200 jpy and no period", amount, currency, period)
		}
		var outcome, who, after string
		var before sql.NullString
		if err := h.DB.QueryRow("select outcome, user_id, status_before, plan_after || ' ' || status_after from provider_events where provider = 'playstore'").Scan(&outcome, &who, &before, &after); err != nil {
			t.Fatal(err)
		}
		if outcome != billing.OutcomeApplied || who != user || before.Valid || after != "pro active" {
			t.Fatalf("event stored as %s for %s, %v → %s", outcome, who, before, after)
		}
		// Delivered again, Google's read changes nothing, and the event keeps what its first
		// delivery did.
		if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-price", 4, "tok-price")); rec.Code != http.StatusOK || rec.Header().Get(webhooks.HeaderOutcome) == billing.OutcomeApplied {
			t.Fatalf("again: %d %q", rec.Code, rec.Header().Get(webhooks.HeaderOutcome))
		}
		if err := h.DB.QueryRow("select outcome, status_before from provider_events where provider = 'playstore'").Scan(&outcome, &before); err != nil || outcome != billing.OutcomeApplied || before.Valid {
			t.Fatalf("after a duplicate the event says %s, %v (%v)", outcome, before, err)
		}
	})
}

// A plan change still pending (or abandoned while pending) names the current purchase as
// its linkedPurchaseToken, but Google keeps that one active: it stays active throughout,
// and only once the new purchase is active does it end.
func TestPlayPendingPlanChangeKeepsTheCurrentPurchase(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		g := playstoretest.Start(t)
		h := billingtest.New(t, d, billingtest.WithPlayStore(t, g))
		user := "00000000-0000-4000-8000-000000000971"
		ahead := billingtest.Now.Add(30 * 24 * time.Hour)
		g.SetPurchase("tok-current", billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", user, ahead, "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"))
		h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-current", 4, "tok-current"))
		for i, state := range []string{"SUBSCRIPTION_STATE_PENDING", "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED", "SUBSCRIPTION_STATE_ACTIVE"} {
			change := billingtest.PlayPurchase(state, user, ahead.Add(time.Hour), "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
			change.LinkedPurchaseToken = "tok-current"
			g.SetPurchase("tok-change", change)
			h.SetNow(billingtest.Now.Add(time.Duration(i+1) * time.Minute))
			if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush(fmt.Sprintf("m-change-%d", i), 4, "tok-change")); rec.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", state, rec.Code, rec.Body)
			}
			current := h.Canonical(playstore.Provider, "tok-current")
			wantCurrent, wantAnswer := billing.StatusActive, "true active pro "+billingtest.Stamp(ahead)
			if state == "SUBSCRIPTION_STATE_ACTIVE" {
				wantCurrent, wantAnswer = billing.StatusExpired, "true active pro "+billingtest.Stamp(ahead.Add(time.Hour))
			}
			if current == nil || current.Status != wantCurrent {
				t.Fatalf("with the change %s the current purchase is %+v, want %s", state, current, wantCurrent)
			}
			if got := h.Answer(t, user); got != wantAnswer {
				t.Fatalf("with the change %s: %s, want %s", state, got, wantAnswer)
			}
		}
	})
}

// A purchase whose linkedPurchaseToken names another user's subscription does not end it.
func TestPlayReplacesOnlyTheSameUsersPurchase(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		g := playstoretest.Start(t)
		h := billingtest.New(t, d, billingtest.WithPlayStore(t, g))
		victim, attacker := "00000000-0000-4000-8000-000000000972", "00000000-0000-4000-8000-000000000973"
		ahead := billingtest.Now.Add(30 * 24 * time.Hour)
		g.SetPurchase("tok-victim", billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", victim, ahead, "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"))
		h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-victim", 4, "tok-victim"))
		hostile := billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", attacker, ahead, "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
		hostile.LinkedPurchaseToken = "tok-victim"
		g.SetPurchase("tok-hostile", hostile)
		h.SetNow(billingtest.Now.Add(time.Minute))
		if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-hostile", 4, "tok-hostile")); rec.Code != http.StatusOK {
			t.Fatalf("the other user's purchase: %d %s", rec.Code, rec.Body)
		}
		if got := h.Answer(t, victim); got != "true active pro "+billingtest.Stamp(ahead) {
			t.Fatalf("the named subscription's user: %s", got)
		}
		if got := h.Answer(t, attacker); got != "true active pro "+billingtest.Stamp(ahead) {
			t.Fatalf("the purchase's own user: %s", got)
		}
		if !strings.Contains(h.Logs.String(), "replaced_user_id="+victim) {
			t.Fatalf("the refusal to replace is not logged:\n%s", h.Logs.String())
		}
	})
}

// A Play one-time product entitles from its purchase for its product's lasts when the
// plans file gives one (else for good, as TestPlayOneTimeProducts shows); a consumed
// purchase entitles nothing.
func TestPlayOneTimeProductLastsAndConsumption(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		g := playstoretest.Start(t)
		h := billingtest.New(t, d, billingtest.WithPlayStore(t, g))
		purchased := billingtest.Now.Add(-2 * time.Hour)
		for i, tc := range []struct {
			consumed int64
			want     string
		}{
			{0, "true active pro " + billingtest.Stamp(purchased.Add(30*24*time.Hour))},
			{1, "false expired free " + billingtest.Stamp(billingtest.Now)},
		} {
			user := fmt.Sprintf("00000000-0000-4000-8000-%012d", 985+i)
			token := fmt.Sprintf("tok-pass-%d", i)
			g.SetProduct(token, &androidpublisher.ProductPurchase{PurchaseState: 0, ConsumptionState: tc.consumed, AcknowledgementState: 1,
				PurchaseTimeMillis: purchased.UnixMilli(), ObfuscatedExternalAccountId: user})
			push := playstoretest.Push(fmt.Sprintf("m-pass-%d", i), map[string]any{"packageName": billingtest.Bundle, "eventTimeMillis": fmt.Sprint(billingtest.Now.UnixMilli()),
				"oneTimeProductNotification": map[string]any{"notificationType": 1, "purchaseToken": token, "sku": "pro_pass"}})
			if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), push); rec.Code != http.StatusOK {
				t.Fatalf("consumed %d: %d %s", tc.consumed, rec.Code, rec.Body)
			}
			if got := h.Answer(t, user); got != tc.want {
				t.Errorf("consumed %d: %s, want %s", tc.consumed, got, tc.want)
			}
		}
	})
}
