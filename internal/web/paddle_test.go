package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/checkout"
	"github.com/tollgate/tollgate/internal/billing/grant"
	"github.com/tollgate/tollgate/internal/billing/paddle"
	"github.com/tollgate/tollgate/internal/billing/paddle/paddledev"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// With Paddle the only web store, the account page's buttons work as with Stripe: Upgrade
// makes a transaction for the buyer and goes to its checkout, Manage billing to the Paddle
// customer's portal, and the page's policy lets its forms go to both.
func TestAccountPageWithPaddle(t *testing.T) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	standIn := paddledev.New(srv.URL)
	srv.Config.Handler = standIn.Handler()
	api, err := paddle.NewAPI(paddle.APIConfig{Key: "pdl_sdbx_apikey_forms", Base: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	d := dbtest.SQLite(t)
	log := slog.New(slog.DiscardHandler)
	r := reader.New(d, log, reader.Options{})
	p := pipeline.New(d, log, pipeline.Options{Adapters: []billing.Adapter{paddle.New([]string{"s"}), grant.New()}})
	p.OnCommit(r.Forget)
	store := api.WebStore()
	c := checkout.New(d, log, r, checkout.Options{PublicURL: "http://forms.example.test", Stores: []billing.WebStore{store},
		Known: []string{billing.ProviderWeb, paddle.Provider}, SoldInApp: billingtest.SoldInApp, Applier: p})
	list, err := plans.ParsePlans([]byte(strings.ReplaceAll(accountPlans, "price_", "pri_")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plans.Sync(context.Background(), d, list, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{db: d, billing: r, checkout: c, checkoutPages: store.PageOrigins()})

	userID := h.fake.AddUser("ada@example.test", "correct horse battery")
	h.post("/session", url.Values{"email": {"ada@example.test"}, "password": {"correct horse battery"}})
	account := h.get("/")
	if csp := account.header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' "+srv.URL+";") {
		t.Fatalf("CSP %q does not let the form reach Paddle's pages", csp)
	}
	res := h.post("/account/checkout", url.Values{"plan": {"pro"}}, "Sec-Fetch-Site", "same-origin")
	txns := standIn.Transactions()
	if res.status != http.StatusSeeOther || len(txns) != 1 || res.location != srv.URL+"/checkout?_ptxn="+txns[0].ID ||
		txns[0].PriceID != "pri_pro" || txns[0].CustomData["user_id"] != userID {
		t.Fatalf("checkout: %d %s %+v", res.status, res.location, txns)
	}

	created := billingtest.Edit(t, billingtest.Fixture(t, "paddle/subscription.created.json"), func(m map[string]any) {
		data := m["data"].(map[string]any)
		data["custom_data"] = map[string]any{"user_id": userID}
		item := data["items"].([]any)[0].(map[string]any)
		item["price"].(map[string]any)["id"] = "pri_pro"
		period := data["current_billing_period"].(map[string]any)
		period["ends_at"] = time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	})
	if _, err := p.Ingest(context.Background(), paddle.Provider, billing.Event{ID: "evt_paddle_1", Type: "subscription.created"}, created); err != nil {
		t.Fatal(err)
	}
	if len(find(doc(t, h.get("/").body), "form", map[string]string{"action": "/account/portal"})) != 1 {
		t.Fatal("Manage billing is not offered to a Paddle subscriber")
	}
	if res := h.post("/account/portal", nil); res.status != http.StatusSeeOther || res.location != srv.URL+"/portal/ctm_01TESTcustomer00000000001" {
		t.Fatalf("portal: %d %s", res.status, res.location)
	}
}
