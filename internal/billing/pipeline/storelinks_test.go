package pipeline_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/playstore"
	"github.com/tollgate/tollgate/internal/billing/playstore/playstoretest"
	"github.com/tollgate/tollgate/internal/billing/webhooks"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

const (
	linkedUser  = "00000000-0000-4000-8000-000000000a01"
	anotherUser = "00000000-0000-4000-8000-000000000a02"
)

// A store purchase made without the app's token and linked by the app's report stays
// linked: later notifications that name no user renew and refund the linked user, and one
// whose token names another user is stored unresolved and logged, never moved.
func TestAppStoreLinkedPurchaseKeepsItsUser(t *testing.T) {
	day := 24 * time.Hour
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		chain := billingtest.NewChain(t)
		h := billingtest.New(t, d, billingtest.WithAppStore(t, chain))
		ctx := context.Background()
		first, renewed := billingtest.Now.Add(30*day), billingtest.Now.Add(60*day)
		signed, err := chain.SignTransaction(appstoredev.Transaction{
			OriginalTransactionID: "8000001", TransactionID: "8000001", BundleID: billingtest.Bundle,
			ProductID: "com.example.app.pro.monthly", Expires: first,
		}, billingtest.Now.Add(-time.Hour), "Production")
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Svc.Claim(ctx, appstore.Provider, billing.Proof{SignedTransaction: signed}, linkedUser); err != nil {
			t.Fatal(err)
		}
		if got := h.Answer(t, linkedUser); got != "true active pro "+billingtest.Stamp(first) {
			t.Fatalf("after the claim: %s", got)
		}

		send := func(id, typ string, at, expires time.Time, token string) string {
			t.Helper()
			rec := h.SendAppStore(chain, billingtest.AppStoreNotification(id, typ, "", "8000001", token, at, expires))
			if rec.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", id, rec.Code, rec.Body)
			}
			return rec.Header().Get(webhooks.HeaderOutcome)
		}
		if got := send("link-renew", "DID_RENEW", billingtest.Now, renewed, ""); got != billing.OutcomeApplied {
			t.Fatalf("the renewal without a token: %s", got)
		}
		if got := h.Answer(t, linkedUser); got != "true active pro "+billingtest.Stamp(renewed) {
			t.Fatalf("after the renewal: %s", got)
		}
		if got := send("link-other", "DID_RENEW", billingtest.Now.Add(time.Minute), renewed, anotherUser); got != billing.OutcomeUnresolved {
			t.Fatalf("a token naming another user: %s", got)
		}
		assertNotMoved(t, h, "8000001", "link-other")
		refunded := billingtest.Now.Add(2 * time.Minute)
		if got := send("link-refund", "REFUND", refunded, renewed, ""); got != billing.OutcomeApplied {
			t.Fatalf("the refund without a token: %s", got)
		}
		if got := h.Answer(t, linkedUser); got != "false refunded free "+billingtest.Stamp(refunded) {
			t.Fatalf("after the refund: %s", got)
		}
	})
}

// assertNotMoved checks that the subscription is still the linked user's, that the other
// user got nothing, and that the event naming them was logged at warn with both users.
func assertNotMoved(t *testing.T, h *billingtest.Harness, subscription, eventID string) {
	t.Helper()
	if row := h.Canonical(appstore.Provider, subscription); row == nil || row.UserID != linkedUser {
		if row = h.Canonical(playstore.Provider, subscription); row == nil || row.UserID != linkedUser {
			t.Fatalf("the subscription moved: %+v", row)
		}
	}
	if got := h.Answer(t, anotherUser); !strings.HasPrefix(got, "false none free") {
		t.Fatalf("the other user: %s", got)
	}
	var warned bool
	for _, line := range strings.Split(h.Logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, eventID) && strings.Contains(line, subscription) &&
			strings.Contains(line, linkedUser) && strings.Contains(line, anotherUser) {
			warned = true
		}
	}
	if !warned {
		t.Fatalf("no warning names the event, the subscription and both users:\n%s", h.Logs.String())
	}
}

// An event stored unresolved before its subscription was linked (as every token-less
// notification of a linked subscription was before links stuck) applies on a replay of the
// unprocessed events once the link exists.
func TestAppStoreUnresolvedBeforeTheLinkReplays(t *testing.T) {
	day := 24 * time.Hour
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		chain := billingtest.NewChain(t)
		h := billingtest.New(t, d, billingtest.WithAppStore(t, chain))
		ctx := context.Background()
		renewed := billingtest.Now.Add(60 * day)
		rec := h.SendAppStore(chain, billingtest.AppStoreNotification("early-renew", "DID_RENEW", "", "8000002", "", billingtest.Now, renewed))
		if rec.Header().Get(webhooks.HeaderOutcome) != billing.OutcomeUnresolved {
			t.Fatalf("a renewal of a subscription nobody is linked to: %d %q", rec.Code, rec.Header().Get(webhooks.HeaderOutcome))
		}
		signed, err := chain.SignTransaction(appstoredev.Transaction{
			OriginalTransactionID: "8000002", TransactionID: "8000002", BundleID: billingtest.Bundle,
			ProductID: "com.example.app.pro.monthly", Expires: billingtest.Now.Add(30 * day),
		}, billingtest.Now.Add(-time.Hour), "Production")
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Svc.Claim(ctx, appstore.Provider, billing.Proof{SignedTransaction: signed}, linkedUser); err != nil {
			t.Fatal(err)
		}
		n, err := h.Svc.Replay(ctx, pipeline.ReplayFilter{Unprocessed: true}, func(string, string, string) {})
		if err != nil || n != 1 {
			t.Fatalf("replayed %d (%v), want 1", n, err)
		}
		if got := h.Answer(t, linkedUser); got != "true active pro "+billingtest.Stamp(renewed) {
			t.Fatalf("after the replay: %s", got)
		}
	})
}

// The same for Google Play: a purchase without obfuscatedExternalAccountId, linked by the
// app's report, renews and is revoked for the linked user; a read naming another user is
// stored unresolved.
func TestPlayLinkedPurchaseKeepsItsUser(t *testing.T) {
	day := 24 * time.Hour
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		g := playstoretest.Start(t)
		h := billingtest.New(t, d, billingtest.WithPlayStore(t, g))
		ctx := context.Background()
		first, renewed := billingtest.Now.Add(30*day), billingtest.Now.Add(60*day)
		g.SetPurchase("tok-linked", billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", "", first, "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"))
		proof := billing.Proof{PurchaseToken: "tok-linked", ProductID: "com.example.app.pro.monthly"}
		if err := h.Svc.Claim(ctx, playstore.Provider, proof, linkedUser); err != nil {
			t.Fatal(err)
		}
		if got := h.Answer(t, linkedUser); got != "true active pro "+billingtest.Stamp(first) {
			t.Fatalf("after the claim: %s", got)
		}
		push := func(id string, typ int, at time.Time) string {
			t.Helper()
			h.SetNow(at)
			rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush(id, typ, "tok-linked"))
			if rec.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", id, rec.Code, rec.Body)
			}
			return rec.Header().Get(webhooks.HeaderOutcome)
		}
		g.SetPurchase("tok-linked", billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", "", renewed, "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"))
		if got := push("m-renewed", 2, billingtest.Now.Add(time.Minute)); got != billing.OutcomeApplied {
			t.Fatalf("the renewal without an account id: %s", got)
		}
		if got := h.Answer(t, linkedUser); got != "true active pro "+billingtest.Stamp(renewed) {
			t.Fatalf("after the renewal: %s", got)
		}
		g.SetPurchase("tok-linked", billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", anotherUser, renewed, "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"))
		if got := push("m-other", 2, billingtest.Now.Add(2*time.Minute)); got != billing.OutcomeUnresolved {
			t.Fatalf("an account id naming another user: %s", got)
		}
		assertNotMoved(t, h, "tok-linked", "m-other")
		revoked := billingtest.Now.Add(3 * time.Minute)
		if got := push("m-revoked", 12, revoked); got != billing.OutcomeApplied {
			t.Fatalf("the revocation: %s", got)
		}
		if got := h.Answer(t, linkedUser); !strings.HasPrefix(got, "false refunded free") {
			t.Fatalf("after the revocation: %s", got)
		}
	})
}
