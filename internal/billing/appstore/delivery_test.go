package appstore_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/webhooks"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// Each notification type reaches the billing answer as the states table says
// (docs/providers.md, "App Store").
func TestAppStoreStatesReachTheAnswer(t *testing.T) {
	day := 24 * time.Hour
	ahead, behind := billingtest.Now.Add(30*day), billingtest.Now.Add(-day)
	grace := billingtest.Now.Add(5 * day)
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		chain := billingtest.NewChain(t)
		h := billingtest.New(t, d, billingtest.WithAppStore(t, chain))
		for i, tc := range []struct {
			typ, subtype string
			edit         func(n *appstoredev.Notification)
			want         string // subscribed status plan period-end
		}{
			{"SUBSCRIBED", "INITIAL_BUY", nil, "true active pro " + billingtest.Stamp(ahead)},
			{"SUBSCRIBED", "INITIAL_BUY", func(n *appstoredev.Notification) { n.Transaction.FreeTrial = true }, "true trialing pro " + billingtest.Stamp(ahead)},
			{"DID_RENEW", "", nil, "true active pro " + billingtest.Stamp(ahead)},
			{"OFFER_REDEEMED", "", nil, "true active pro " + billingtest.Stamp(ahead)},
			{"RENEWAL_EXTENDED", "", nil, "true active pro " + billingtest.Stamp(ahead)},
			{"REFUND_REVERSED", "", nil, "true active pro " + billingtest.Stamp(ahead)},
			{"DID_CHANGE_RENEWAL_PREF", "UPGRADE", func(n *appstoredev.Notification) { n.Transaction.ProductID = "pro_subscription" }, "true active pro " + billingtest.Stamp(ahead)},
			{"DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", nil, "true cancelled pro " + billingtest.Stamp(ahead)},
			{"DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", nil, "true active pro " + billingtest.Stamp(ahead)},
			{"DID_FAIL_TO_RENEW", "GRACE_PERIOD", func(n *appstoredev.Notification) { n.Transaction.Expires, n.GraceUntil = behind, grace }, "true past_due pro " + billingtest.Stamp(grace)},
			{"DID_FAIL_TO_RENEW", "", func(n *appstoredev.Notification) { n.Transaction.Expires = behind }, "false past_due free " + billingtest.Stamp(behind)},
			{"EXPIRED", "VOLUNTARY", nil, "false expired free " + billingtest.Stamp(billingtest.Now.Add(-time.Minute))},
			{"GRACE_PERIOD_EXPIRED", "", nil, "false expired free " + billingtest.Stamp(billingtest.Now.Add(-time.Minute))},
			{"REFUND", "", nil, "false refunded free " + billingtest.Stamp(billingtest.Now.Add(-time.Minute))},
			{"REVOKE", "", nil, "false refunded free " + billingtest.Stamp(billingtest.Now.Add(-time.Minute))},
			{"ONE_TIME_CHARGE", "", func(n *appstoredev.Notification) {
				n.Transaction.Expires, n.Transaction.Type = time.Time{}, "Non-Consumable"
			}, "true active pro none"},
		} {
			name := tc.typ + "/" + tc.subtype
			user := fmt.Sprintf("00000000-0000-4000-8000-%012d", 700+i)
			n := billingtest.AppStoreNotification(fmt.Sprintf("as-state-%d", i), tc.typ, tc.subtype, fmt.Sprintf("3000%d", i), user, billingtest.Now.Add(-time.Minute), ahead)
			if tc.edit != nil {
				tc.edit(&n)
			}
			if rec := h.SendAppStore(chain, n); rec.Code != http.StatusOK || rec.Header().Get(webhooks.HeaderOutcome) != billing.OutcomeApplied {
				t.Fatalf("%s: %d %q %s", name, rec.Code, rec.Header().Get(webhooks.HeaderOutcome), rec.Body)
			}
			if got := h.Answer(t, user); got != tc.want {
				t.Errorf("%s: %s, want %s", name, got, tc.want)
			}
		}
	})
}

// What is not a subscription's change is answered and, but for the filtered environment,
// stored; what does not verify is refused and stored nowhere.
func TestAppStoreAnswersWithoutApplying(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		chain := billingtest.NewChain(t)
		h := billingtest.New(t, d, billingtest.WithAppStore(t, chain))
		user := "00000000-0000-4000-8000-000000000799"
		signed := billingtest.Now.Add(-time.Minute)
		sandbox := billingtest.AppStoreNotification("as-sandbox", "SUBSCRIBED", "", "4001", user, signed, billingtest.Now.Add(time.Hour))
		sandbox.Environment = "Sandbox"
		noUser := billingtest.AppStoreNotification("as-no-user", "SUBSCRIBED", "", "4002", "", signed, billingtest.Now.Add(time.Hour))
		for _, tc := range []struct {
			name    string
			n       appstoredev.Notification
			chain   *appstoredev.Chain
			code    int
			outcome string
			stored  int
		}{
			{"sandbox filtered out", sandbox, chain, http.StatusOK, "environment_filtered", 0},
			{"a forged chain", billingtest.AppStoreNotification("as-forged", "SUBSCRIBED", "", "4003", user, signed, billingtest.Now.Add(time.Hour)), billingtest.NewChain(t), http.StatusUnauthorized, "", 0}, // a refusal says no outcome
			{"the test notification", appstoredev.Notification{UUID: "as-test", Type: "TEST", BundleID: billingtest.Bundle, Signed: signed}, chain, http.StatusOK, billing.OutcomeIgnored, 1},
			{"a type that changes nothing", billingtest.AppStoreNotification("as-price", "PRICE_INCREASE", "PENDING", "4004", user, signed, billingtest.Now.Add(time.Hour)), chain, http.StatusOK, billing.OutcomeIgnored, 2},
			{"no appAccountToken", noUser, chain, http.StatusOK, billing.OutcomeUnresolved, 3},
			{"a downgrade, which waits for renewal", billingtest.AppStoreNotification("as-down", "DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", "4005", user, signed, billingtest.Now.Add(time.Hour)), chain, http.StatusOK, billing.OutcomeIgnored, 4},
		} {
			rec := h.SendAppStore(tc.chain, tc.n)
			if rec.Code != tc.code || rec.Header().Get(webhooks.HeaderOutcome) != tc.outcome || h.CountEvents() != tc.stored {
				t.Errorf("%s: %d %q with %d stored, want %d %q with %d", tc.name, rec.Code, rec.Header().Get(webhooks.HeaderOutcome), h.CountEvents(), tc.code, tc.outcome, tc.stored)
			}
		}
		if got := h.Answer(t, user); got != "false none free none" {
			t.Fatalf("the user's answer moved: %s", got)
		}
		if rec := h.Post("/billing/webhooks/appstore", []byte(`{"signedPayload":`), nil); rec.Code != http.StatusBadRequest {
			t.Fatalf("bad JSON: %d", rec.Code)
		}
	})
}

// Whatever order the notifications of a subscription's life arrive in, and however often,
// the subscription ends as it would in order.
func TestAppStoreOrderAndDuplicates(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		chain := billingtest.NewChain(t)
		h := billingtest.New(t, d, billingtest.WithAppStore(t, chain))
		t0 := billingtest.Now.Add(-20 * 24 * time.Hour)
		life := func(sub string) map[string]appstoredev.Notification {
			user := "00000000-0000-4000-8000-000000000800"
			return map[string]appstoredev.Notification{
				"subscribed": billingtest.AppStoreNotification(sub+"-1", "SUBSCRIBED", "INITIAL_BUY", sub, user, t0, t0.Add(7*24*time.Hour)),
				"renewed":    billingtest.AppStoreNotification(sub+"-2", "DID_RENEW", "", sub, user, t0.Add(7*24*time.Hour), t0.Add(14*24*time.Hour)),
				"cancelled":  billingtest.AppStoreNotification(sub+"-3", "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", sub, user, t0.Add(8*24*time.Hour), t0.Add(14*24*time.Hour)),
				"expired":    billingtest.AppStoreNotification(sub+"-4", "EXPIRED", "VOLUNTARY", sub, user, t0.Add(14*24*time.Hour), t0.Add(14*24*time.Hour)),
			}
		}
		var want *billingtest.CanonicalRow
		for i, order := range billingtest.Permutations([]string{"subscribed", "renewed", "cancelled", "expired"}) {
			sub := fmt.Sprintf("5%03d", i)
			events := life(sub)
			for j, name := range append(order, order[0], order[2]) { // and two redeliveries
				rec := h.SendAppStore(chain, events[name])
				if rec.Code != http.StatusOK {
					t.Fatalf("%v, delivery %d (%s): %d %s", order, j, name, rec.Code, rec.Body)
				}
			}
			got := h.Canonical(appstore.Provider, sub)
			if got == nil || got.Status != billing.StatusExpired || got.Plan != "pro" {
				t.Fatalf("%v: %+v, want expired on pro", order, got)
			}
			if want == nil {
				want = got
			} else if !got.PeriodEnd.Equal(*want.PeriodEnd) || got.UserID != want.UserID {
				t.Fatalf("%v ends %+v, in order it ends %+v", order, got, want)
			}
		}
	})
}

// Forged notifications are refused through the route, and nothing of them is stored.
func TestAppStoreForgeriesStoreNothing(t *testing.T) {
	chain := billingtest.NewChain(t)
	h := billingtest.New(t, dbtest.SQLite(t), billingtest.WithAppStore(t, chain))
	reissue := func(opts appstoredev.Options) *appstoredev.Chain {
		c, err := chain.Reissue(opts)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	signed := billingtest.Now.Add(-time.Minute)
	n := billingtest.AppStoreNotification("as-forged", "SUBSCRIBED", "", "8001", "00000000-0000-4000-8000-000000000990", signed, billingtest.Now.Add(time.Hour))
	otherApp := n
	otherApp.BundleID = "com.example.other"
	for name, c := range map[string]*appstoredev.Chain{
		"a chain to another root":       billingtest.NewChain(t),
		"a leaf without the marker":     reissue(appstoredev.Options{NoLeafMarker: true}),
		"an intermediate without it":    reissue(appstoredev.Options{NoIntermediateMarker: true}),
		"a leaf expired when it signed": reissue(appstoredev.Options{LeafNotAfter: signed.Add(-time.Hour)}),
	} {
		if rec := h.SendAppStore(c, n); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, rec.Code)
		}
	}
	if rec := h.SendAppStore(chain, otherApp); rec.Code != http.StatusUnauthorized {
		t.Errorf("another app's: %d, want 401", rec.Code)
	}
	if got := h.CountEvents(); got != 0 {
		t.Fatalf("%d events stored from forgeries", got)
	}
}

// A one-time purchase entitles as its type says: a Non-Consumable for good; a
// Non-Renewing Subscription from its purchase for its product's lasts, and without one
// nothing (unresolved: no duration); a Consumable nothing (ignored).
func TestAppStoreOneTimePurchasesByType(t *testing.T) {
	purchased := billingtest.Now.Add(-time.Hour)
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		chain := billingtest.NewChain(t)
		h := billingtest.New(t, d, billingtest.WithAppStore(t, chain))
		for i, tc := range []struct {
			typ, product, outcome, want string
		}{
			{"Non-Consumable", "pro_subscription", billing.OutcomeApplied, "true active pro none"},
			{"Non-Renewing Subscription", "pro_pass", billing.OutcomeApplied, "true active pro " + billingtest.Stamp(purchased.Add(30*24*time.Hour))},
			{"Non-Renewing Subscription", "pro_nonrenewing_undated", billing.OutcomeUnresolved, "false none free none"},
			{"Consumable", "pro_subscription", billing.OutcomeIgnored, "false none free none"},
		} {
			user := fmt.Sprintf("00000000-0000-4000-8000-%012d", 760+i)
			n := billingtest.AppStoreNotification(fmt.Sprintf("as-once-%d", i), "ONE_TIME_CHARGE", "", fmt.Sprintf("3100%d", i), user, billingtest.Now, time.Time{})
			n.Transaction.Type, n.Transaction.ProductID, n.Transaction.Purchased = tc.typ, tc.product, purchased
			rec := h.SendAppStore(chain, n)
			if rec.Code != http.StatusOK || rec.Header().Get(webhooks.HeaderOutcome) != tc.outcome {
				t.Fatalf("%s %s: %d %q, want %s", tc.typ, tc.product, rec.Code, rec.Header().Get(webhooks.HeaderOutcome), tc.outcome)
			}
			if tc.outcome == billing.OutcomeUnresolved && !strings.Contains(rec.Header().Get(webhooks.HeaderReason), "no duration") {
				t.Errorf("%s without lasts: reason %q", tc.typ, rec.Header().Get(webhooks.HeaderReason))
			}
			if got := h.Answer(t, user); got != tc.want {
				t.Errorf("%s %s: %s, want %s", tc.typ, tc.product, got, tc.want)
			}
		}
	})
}

// EXTERNAL_PURCHASE_TOKEN and RESCIND_CONSENT name their app outside data and summary: they
// are verified, answered 200, stored as ignored, and change nothing.
func TestAppStoreExternalPurchaseAndRescindedConsent(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		chain := billingtest.NewChain(t)
		h := billingtest.New(t, d, billingtest.WithAppStore(t, chain))
		for i, payload := range []map[string]any{
			{"notificationType": "EXTERNAL_PURCHASE_TOKEN", "subtype": "UNREPORTED", "notificationUUID": "as-external-1", "version": "2.0",
				"signedDate": billingtest.Now.UnixMilli(), "externalPurchaseToken": map[string]any{
					"externalPurchaseId": "b2158121-7af9-49d4-9561-1f588205523e", "tokenCreationDate": billingtest.Now.UnixMilli(), "appAppleId": 55555, "bundleId": billingtest.Bundle}},
			{"notificationType": "RESCIND_CONSENT", "notificationUUID": "as-rescind-1", "version": "2.0", "signedDate": billingtest.Now.UnixMilli(),
				"appData": map[string]any{"appAppleId": 41234, "bundleId": billingtest.Bundle, "environment": "Production", "signedAppTransactionInfo": "x"}},
		} {
			body, err := chain.SignDecoded(payload)
			if err != nil {
				t.Fatal(err)
			}
			rec := h.Post("/billing/webhooks/appstore", body, nil)
			if rec.Code != http.StatusOK || rec.Header().Get(webhooks.HeaderOutcome) != billing.OutcomeIgnored {
				t.Fatalf("%s: %d %q %s", payload["notificationType"], rec.Code, rec.Header().Get(webhooks.HeaderOutcome), rec.Body)
			}
			if n := h.CountEvents(); n != i+1 {
				t.Fatalf("%s: %d events stored", payload["notificationType"], n)
			}
		}
	})
}
