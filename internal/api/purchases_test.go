package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/billing/playstore"
	"github.com/tollgate/tollgate/internal/billing/playstore/playstoretest"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"google.golang.org/api/androidpublisher/v3"
)

const purchaseBundle = "com.example.app"

// A transaction the app reports entitles its user at once, without a notification; another
// user cannot claim it, and what does not verify changes nothing.
func TestAppStorePurchases(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		chain, err := appstoredev.New(appstoredev.Options{})
		if err != nil {
			t.Fatal(err)
		}
		store, err := appstore.New(appstore.Config{BundleID: purchaseBundle, RootCerts: chain.RootPEM(), Environments: []string{"Production"}})
		if err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, harnessConfig{db: d, plans: checkoutPlans, adapters: []billing.Adapter{store}})
		owner := h.key.mint(t, validClaims())
		otherClaims := validClaims()
		otherClaims["sub"] = "0b4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d"
		other := h.key.mint(t, otherClaims)

		now := time.Now().Truncate(time.Millisecond)
		transaction := func(token string, bundle string) string {
			signed, err := chain.SignTransaction(appstoredev.Transaction{
				OriginalTransactionID: "7000001", TransactionID: "7000001", BundleID: bundle, ProductID: "com.example.team",
				AppAccountToken: token, Expires: now.Add(30 * 24 * time.Hour),
			}, now.Add(-time.Second), "Production")
			if err != nil {
				t.Fatal(err)
			}
			return signed
		}
		report := func(token, signed string) (int, string) {
			body, _ := json.Marshal(map[string]string{"store": "appstore", "signed_transaction": signed})
			rec := h.post("/api/v1/billing/purchases", token, string(body))
			return rec.Code, rec.Body.String()
		}
		plan := func(token string) string {
			rec := h.do(http.MethodGet, "/api/v1/me", bearer(token), nil)
			var me struct{ Billing billing.BillingView }
			if err := json.Unmarshal(rec.Body.Bytes(), &me); err != nil || rec.Code != http.StatusOK {
				t.Fatalf("/me: %d %s", rec.Code, rec.Body)
			}
			status := "none"
			if me.Billing.Status != nil {
				status = *me.Billing.Provider + " " + *me.Billing.Status
			}
			return me.Billing.Plan.Key + " " + status
		}

		forged, err := appstoredev.New(appstoredev.Options{})
		if err != nil {
			t.Fatal(err)
		}
		forgedJWS, err := forged.SignTransaction(appstoredev.Transaction{OriginalTransactionID: "7000001", BundleID: purchaseBundle, ProductID: "com.example.team"}, now, "Production")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name, token, jws string
			code             int
		}{
			{"a forged chain", owner, forgedJWS, http.StatusUnprocessableEntity},
			{"another app's transaction", owner, transaction("", "com.example.other"), http.StatusUnprocessableEntity},
			{"a transaction the store links to another user", owner, transaction("0B4C8162-3B1E-4F7A-9D2C-8E6F0A1B2C3D", purchaseBundle), http.StatusConflict},
			{"not a JWS", owner, "nonsense", http.StatusUnprocessableEntity},
		} {
			if code, body := report(tc.token, tc.jws); code != tc.code {
				t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.code)
			}
		}
		if got := plan(owner); got != "free none" {
			t.Fatalf("refused purchases changed the answer: %s", got)
		}
		code, body := report(owner, transaction("", purchaseBundle))
		if code != http.StatusOK || !strings.Contains(body, `"provider":"appstore"`) || !strings.Contains(body, `"subscribed":true`) {
			t.Fatalf("the owner's purchase: %d %s", code, body)
		}
		if got := plan(owner); got != "team appstore active" {
			t.Fatalf("after the purchase: %s", got)
		}
		if code, body := report(other, transaction("", purchaseBundle)); code != http.StatusConflict {
			t.Fatalf("another user claiming the purchase: %d %s, want 409", code, body)
		}
		if got := plan(other); got != "free none" {
			t.Fatalf("the other user's answer moved: %s", got)
		}
		if code, _ := report(owner, transaction("", purchaseBundle)); code != http.StatusOK {
			t.Fatalf("reporting it again: %d", code)
		}
		if code, _ := report(owner, ""); code != http.StatusUnprocessableEntity {
			t.Fatalf("no proof: %d", code)
		}
		body2, _ := json.Marshal(map[string]string{"store": "playstore", "purchase_token": "x", "product_id": "y"})
		if rec := h.post("/api/v1/billing/purchases", owner, string(body2)); rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("a store not configured: %d", rec.Code)
		}
	})
}

// A Play purchase the app reports is read from Google, linked to the caller, entitles at
// once and is acknowledged once; another user cannot take it, and a token Google does not
// know, or another product's, changes nothing.
func TestPlayPurchases(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		g := playstoretest.Start(t)
		store, err := playstore.New(context.Background(), playstore.Config{
			PackageName: "com.example.app", PushAudience: "a", PushServiceAccount: "s", PushJWKSURL: g.JWKSURL(),
			ServiceAccountJSON: g.ServiceAccountJSON(), APIBase: g.URL + "/",
		})
		if err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, harnessConfig{db: d, plans: checkoutPlans, adapters: []billing.Adapter{store}})
		owner := h.key.mint(t, validClaims())
		otherClaims := validClaims()
		otherClaims["sub"] = "0b4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d"
		other := h.key.mint(t, otherClaims)
		g.SetPurchase("play-tok-1", &androidpublisher.SubscriptionPurchaseV2{
			SubscriptionState: "SUBSCRIPTION_STATE_ACTIVE", AcknowledgementState: "ACKNOWLEDGEMENT_STATE_PENDING",
			LineItems: []*androidpublisher.SubscriptionPurchaseLineItem{{ProductId: "com.example.team", ExpiryTime: time.Now().Add(30 * 24 * time.Hour).Format(time.RFC3339)}},
		})
		report := func(token, purchase, product string) (int, string) {
			body, _ := json.Marshal(map[string]string{"store": "playstore", "purchase_token": purchase, "product_id": product})
			rec := h.post("/api/v1/billing/purchases", token, string(body))
			return rec.Code, rec.Body.String()
		}
		if code, body := report(owner, "play-tok-unknown", "com.example.team"); code != http.StatusUnprocessableEntity {
			t.Fatalf("a token Google does not know: %d %s", code, body)
		}
		if code, body := report(owner, "play-tok-1", "com.example.other"); code != http.StatusUnprocessableEntity {
			t.Fatalf("another product: %d %s", code, body)
		}
		code, body := report(owner, "play-tok-1", "com.example.team")
		if code != http.StatusOK || !strings.Contains(body, `"provider":"playstore"`) || !strings.Contains(body, `"subscribed":true`) {
			t.Fatalf("the owner's purchase: %d %s", code, body)
		}
		if code, body := report(other, "play-tok-1", "com.example.team"); code != http.StatusConflict {
			t.Fatalf("another user: %d %s, want 409", code, body)
		}
		if code, _ := report(owner, "play-tok-1", "com.example.team"); code != http.StatusOK || g.Acks("play-tok-1") != 1 {
			t.Fatalf("reported again: %d, acknowledged %d times, want once", code, g.Acks("play-tok-1"))
		}
	})
}

// Each report of a Play purchase reads Google's API: a user gets 10 a minute, then 429
// with Retry-After; another user is not held back.
func TestPurchaseReportsAreThrottledPerUser(t *testing.T) {
	g := playstoretest.Start(t)
	store, err := playstore.New(context.Background(), playstore.Config{
		PackageName: "com.example.app", PushAudience: "a", PushServiceAccount: "s", PushJWKSURL: g.JWKSURL(),
		ServiceAccountJSON: g.ServiceAccountJSON(), APIBase: g.URL + "/",
	})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessConfig{plans: checkoutPlans, adapters: []billing.Adapter{store}})
	owner := h.key.mint(t, validClaims())
	otherClaims := validClaims()
	otherClaims["sub"] = "0b4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d"
	other := h.key.mint(t, otherClaims)
	report := func(token string) *httptest.ResponseRecorder {
		return h.post("/api/v1/billing/purchases", token, `{"store":"playstore","purchase_token":"play-tok-none","product_id":"com.example.team"}`)
	}
	for i := range 10 {
		if rec := report(owner); rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("report %d: %d %s", i+1, rec.Code, rec.Body)
		}
	}
	rec := report(owner)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("the 11th report in a minute: %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	if rec := report(other); rec.Code != http.StatusUnprocessableEntity {
		t.Fatalf("another user's first report: %d", rec.Code)
	}
}
