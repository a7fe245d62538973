package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/checkout"
	"github.com/tollgate/tollgate/internal/billing/paddle"
	"github.com/tollgate/tollgate/internal/billing/paddle/paddledev"
)

const paddlePlans = `
plans:
  free:
    default: true
    entitlements: [{name: projects, value: 1}]
  pro:
    entitlements: [{name: projects, value: 10}]
    web_prices: [price_pro_monthly, pri_01TESTpromonthly000000001]
`

// Paddle as the only web store set up: checkout makes a transaction for the plan's Paddle
// price with the caller in custom_data, named or not; a web store not set up is 501 and a
// name the server does not know 422 unknown-store; the portal opens the caller's Paddle
// customer's session once a subscription links one.
func TestPaddleCheckoutAndPortal(t *testing.T) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	standIn := paddledev.New(srv.URL)
	srv.Config.Handler = standIn.Handler()
	api, err := paddle.NewAPI(paddle.APIConfig{Key: "pdl_sdbx_apikey_test", Base: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessConfig{plans: paddlePlans, adapters: []billing.Adapter{paddle.New([]string{"s"})}, checkout: &checkout.Options{
		PublicURL: checkoutPublicURL, Stores: []billing.WebStore{api.WebStore()}, Known: []string{billing.ProviderWeb, paddle.Provider},
		SoldInApp: billingtest.SoldInApp,
	}})
	token := h.key.mint(t, validClaims())
	url := func(rec *httptest.ResponseRecorder) string {
		var out struct{ URL string }
		json.Unmarshal(rec.Body.Bytes(), &out)
		return out.URL
	}
	for i, body := range []string{`{"plan":"pro","provider":"paddle"}`, `{"plan":"pro"}`} {
		rec := h.post("/api/v1/billing/checkout", token, body)
		mustStatus(t, rec, http.StatusOK)
		txns := standIn.Transactions()
		if len(txns) != i+1 {
			t.Fatalf("%s: %d transactions made", body, len(txns))
		}
		txn := txns[i]
		if url(rec) != srv.URL+"/checkout?_ptxn="+txn.ID || txn.PriceID != "pri_01TESTpromonthly000000001" || txn.CustomData["user_id"] != testUser {
			t.Fatalf("%s: answered %q for %+v", body, url(rec), txn)
		}
	}
	mustStatus(t, h.post("/api/v1/billing/checkout", token, `{"plan":"pro","provider":"web"}`), http.StatusNotImplemented)
	rec := h.post("/api/v1/billing/checkout", token, `{"plan":"pro","provider":"acme"}`)
	if mustStatus(t, rec, http.StatusUnprocessableEntity); problemType(rec) != "unknown-store" {
		t.Fatalf("an unknown store: %s", rec.Body)
	}

	mustStatus(t, h.post("/api/v1/billing/portal", token, `{"provider":"paddle"}`), http.StatusNotFound)
	created := billingtest.Edit(t, billingtest.Fixture(t, "paddle/subscription.created.json"), func(m map[string]any) {
		m["data"].(map[string]any)["custom_data"] = map[string]any{"user_id": testUser}
	})
	if _, err := h.ingest(paddle.Provider, "evt_01TESTsubcreated000000001", "subscription.created", created); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{`{"provider":"paddle"}`, ``} {
		rec := h.do(http.MethodPost, "/api/v1/billing/portal", bearer(token), strings.NewReader(body), "Content-Type", "application/json")
		if mustStatus(t, rec, http.StatusOK); url(rec) != srv.URL+"/portal/ctm_01TESTcustomer00000000001" {
			t.Fatalf("the portal (%q): %s", body, rec.Body)
		}
	}
}
