package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/adapty"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/checkout"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/billing/stripe/stripemock"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

const (
	checkoutKey       = "sk_test_checkoutSecret42"
	checkoutPublicURL = "https://app.example.test"
	checkoutPlans     = `
plans:
  free:
    default: true
    entitlements: [{name: projects, value: 1}]
  pro:
    entitlements: [{name: projects, value: 10}]
    web_prices: [price_pro_monthly, price_pro_yearly]
  team:
    entitlements: [{name: projects, value: 50}]
    mobile_products: [com.example.team]
  enterprise:
    entitlements: [{name: projects, value: 500}]
    web_prices: [price_enterprise]
`
)

// fakeProvider stands in for the web provider's session endpoints: it records each form
// and answers a session URL, or fails as told.
type fakeProvider struct {
	mu    sync.Mutex
	forms []url.Values
	paths []string
	fail  bool
}

func (p *fakeProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"type":"api_error","message":"internal provider detail about `+checkoutKey+`"}}`)
		return
	}
	r.ParseForm()
	p.forms = append(p.forms, r.PostForm)
	p.paths = append(p.paths, r.URL.Path)
	fmt.Fprintf(w, `{"id":"cs_%d","url":"https://pay.example.test/s/%d"}`, len(p.forms), len(p.forms))
}

func (p *fakeProvider) last() (string, url.Values) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.forms) == 0 {
		return "", nil
	}
	return p.paths[len(p.paths)-1], p.forms[len(p.forms)-1]
}

func newCheckoutHarness(t *testing.T, d *db.DB, base string) *harness {
	return newHarness(t, harnessConfig{db: d, plans: checkoutPlans, checkout: &checkout.Options{
		PublicURL: checkoutPublicURL, RedirectOrigins: []string{"https://www.example.test"},
		Stores: []billing.WebStore{stripe.WebStore(stripe.NewClient(stripe.Config{Key: checkoutKey, Base: base}))}, SoldInApp: billingtest.SoldInApp,
	}})
}

func (h *harness) post(path, token, body string) *httptest.ResponseRecorder {
	return h.do(http.MethodPost, path, bearer(token), strings.NewReader(body), "Content-Type", "application/json")
}

// subscribe applies the webhook a paid web subscription sends: user on price, through
// customer, entitled for a month.
func (h *harness) subscribe(t *testing.T, id, userID, customer, price string) {
	t.Helper()
	now := time.Now().Unix()
	event := fmt.Sprintf(`{"id":"evt_%s","object":"event","type":"customer.subscription.created","created":%d,"data":{"object":{
		"id":"%s","object":"subscription","customer":"%s","status":"active","created":%d,"metadata":{"user_id":"%s"},
		"items":{"object":"list","data":[{"price":{"id":"%s"},"current_period_end":%d}]}}}}`,
		id, now, id, customer, now, userID, price, now+30*86400)
	done, err := h.ingest(billing.ProviderWeb, "evt_"+id, "customer.subscription.created", []byte(event))
	if err != nil || done.Outcome != "applied" {
		t.Fatalf("subscribe: %+v %v", done, err)
	}
}

func TestCheckoutAndPortal(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		provider := &fakeProvider{}
		srv := httptest.NewServer(provider)
		defer srv.Close()
		h := newCheckoutHarness(t, d, srv.URL)
		token := h.key.mint(t, validClaims())

		// A first purchase: the plan's first price, the token's e-mail, the default URLs.
		rec := h.post("/api/v1/billing/checkout", token, `{"plan":"pro"}`)
		mustStatus(t, rec, http.StatusOK)
		if strings.TrimSpace(rec.Body.String()) != `{"url":"https://pay.example.test/s/1"}` {
			t.Fatalf("body %s", rec.Body)
		}
		path, form := provider.last()
		want := url.Values{
			"mode": {"subscription"}, "line_items[0][price]": {"price_pro_monthly"}, "line_items[0][quantity]": {"1"},
			"client_reference_id": {testUser}, "subscription_data[metadata][user_id]": {testUser},
			"customer_email": {"user42@example.test"},
			"success_url":    {checkoutPublicURL + "/?checkout=success"}, "cancel_url": {checkoutPublicURL + "/?checkout=cancel"},
		}
		if path != "/v1/checkout/sessions" || form.Encode() != want.Encode() {
			t.Fatalf("sent %s %s\nwant %s", path, form.Encode(), want.Encode())
		}

		// Another price of the plan, and URLs on an allowed origin.
		mustStatus(t, h.post("/api/v1/billing/checkout", token,
			`{"plan":"pro","price":"price_pro_yearly","success_url":"https://www.example.test/thanks?s={CHECKOUT_SESSION_ID}","cancel_url":"https://app.example.test/pricing"}`), http.StatusOK)
		_, form = provider.last()
		if form.Get("line_items[0][price]") != "price_pro_yearly" || form.Get("success_url") != "https://www.example.test/thanks?s={CHECKOUT_SESSION_ID}" ||
			form.Get("cancel_url") != "https://app.example.test/pricing" {
			t.Fatalf("sent %s", form.Encode())
		}

		// No customer yet: no portal.
		rec = h.post("/api/v1/billing/portal", token, ``)
		mustStatus(t, rec, http.StatusNotFound)
		if problemType(rec) != "no-billing-account" {
			t.Fatalf("portal without a customer: %s", rec.Body)
		}

		// Subscribed to pro through cus_42: pro again is a conflict, a higher plan goes to the
		// same customer, and the portal opens for it.
		h.subscribe(t, "sub_pro", testUser, "cus_42", "price_pro_monthly")
		rec = h.post("/api/v1/billing/checkout", token, `{"plan":"pro"}`)
		mustStatus(t, rec, http.StatusConflict)
		mustStatus(t, h.post("/api/v1/billing/checkout", token, `{"plan":"enterprise"}`), http.StatusOK)
		if _, form = provider.last(); form.Get("customer") != "cus_42" || form.Has("customer_email") || form.Get("line_items[0][price]") != "price_enterprise" {
			t.Fatalf("upgrade sent %s", form.Encode())
		}
		rec = h.post("/api/v1/billing/portal", token, ``)
		mustStatus(t, rec, http.StatusOK)
		if path, form = provider.last(); path != "/v1/billing_portal/sessions" || form.Encode() != "customer=cus_42&return_url="+url.QueryEscape(checkoutPublicURL+"/") {
			t.Fatalf("portal sent %s %s", path, form.Encode())
		}
	})
}

func TestCheckoutRefusals(t *testing.T) {
	provider := &fakeProvider{}
	srv := httptest.NewServer(provider)
	defer srv.Close()
	h := newCheckoutHarness(t, dbtest.SQLite(t), srv.URL)
	token := h.key.mint(t, validClaims())
	for _, tc := range []struct {
		name, path, body string
		status           int
		kind             string
	}{
		{"unknown plan", "/api/v1/billing/checkout", `{"plan":"platinum"}`, 422, "invalid-checkout"},
		{"plan without web prices", "/api/v1/billing/checkout", `{"plan":"team"}`, 422, "invalid-checkout"},
		{"the default plan", "/api/v1/billing/checkout", `{"plan":"free"}`, 422, "invalid-checkout"},
		{"a foreign price", "/api/v1/billing/checkout", `{"plan":"pro","price":"price_enterprise"}`, 422, "invalid-checkout"},
		{"a success URL elsewhere", "/api/v1/billing/checkout", `{"plan":"pro","success_url":"https://evil.example/"}`, 422, "invalid-checkout"},
		{"a look-alike origin", "/api/v1/billing/checkout", `{"plan":"pro","cancel_url":"https://app.example.test.evil.example/"}`, 422, "invalid-checkout"},
		{"credentials in the URL", "/api/v1/billing/checkout", `{"plan":"pro","cancel_url":"https://app.example.test@evil.example/"}`, 422, "invalid-checkout"},
		{"a relative URL", "/api/v1/billing/checkout", `{"plan":"pro","success_url":"//evil.example/"}`, 422, "invalid-checkout"},
		{"a script URL", "/api/v1/billing/checkout", `{"plan":"pro","success_url":"javascript:alert(1)"}`, 422, "invalid-checkout"},
		{"no plan", "/api/v1/billing/checkout", `{}`, 422, ""},
		{"no customer for the portal", "/api/v1/billing/portal", ``, 404, "no-billing-account"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := h.post(tc.path, token, tc.body)
			mustStatus(t, rec, tc.status)
			if tc.kind != "" && problemType(rec) != tc.kind {
				t.Fatalf("problem %s", rec.Body)
			}
		})
	}
	if _, form := provider.last(); form != nil {
		t.Fatalf("a refused request reached the provider: %s", form.Encode())
	}

	// The provider failing is a 502 that tells nothing of its message, nor the key.
	provider.fail = true
	h.subscribe(t, "sub_portal", testUser, "cus_7", "price_pro_monthly")
	for _, path := range []string{"/api/v1/billing/checkout", "/api/v1/billing/portal"} {
		rec := h.post(path, token, `{"plan":"enterprise"}`)
		mustStatus(t, rec, http.StatusBadGateway)
		if problemType(rec) != "provider-error" {
			t.Fatalf("%s: %s", path, rec.Body)
		}
		for _, leak := range []string{checkoutKey, "internal provider detail"} {
			if strings.Contains(rec.Body.String(), leak) || strings.Contains(h.logs.String(), leak) {
				t.Fatalf("%s: %q reached the answer or the log:\n%s\n%s", path, leak, rec.Body, h.logs)
			}
		}
	}
	if !strings.Contains(h.logs.String(), "web provider refused a session") {
		t.Fatalf("the failure was not logged:\n%s", h.logs)
	}

	// Without WEB_API_KEY the routes say checkout is not configured.
	off := newHarness(t, harnessConfig{plans: checkoutPlans})
	rec := off.post("/api/v1/billing/checkout", off.key.mint(t, validClaims()), `{"plan":"pro"}`)
	mustStatus(t, rec, http.StatusNotImplemented)
}

// The events a real checkout produces entitle the buyer with no further step: the
// subscription carries the metadata.user_id the checkout set.
func TestCheckoutWebhooksEntitleTheBuyer(t *testing.T) {
	provider := &fakeProvider{}
	srv := httptest.NewServer(provider)
	defer srv.Close()
	h := newCheckoutHarness(t, dbtest.SQLite(t), srv.URL)
	token := h.key.mint(t, validClaims())
	mustStatus(t, h.post("/api/v1/billing/checkout", token, `{"plan":"pro"}`), http.StatusOK)
	_, form := provider.last()

	// What the provider sends after the buyer pays, in one second: the session completed
	// (not handled), the subscription created incomplete then updated active, the invoice paid.
	now := time.Now().Unix()
	sub := func(status string) map[string]any {
		return map[string]any{"id": "sub_from_checkout", "object": "subscription", "customer": "cus_new", "status": status, "created": now,
			"metadata": map[string]string{"user_id": form.Get("subscription_data[metadata][user_id]")},
			"items":    map[string]any{"data": []map[string]any{{"price": map[string]string{"id": form.Get("line_items[0][price]")}, "current_period_end": now + 30*86400}}}}
	}
	events := []map[string]any{
		{"id": "evt_cs", "type": "checkout.session.completed", "data": map[string]any{"object": map[string]any{
			"object": "checkout.session", "client_reference_id": form.Get("client_reference_id"), "customer": "cus_new", "subscription": "sub_from_checkout"}}},
		{"id": "evt_created", "type": "customer.subscription.created", "data": map[string]any{"object": sub("incomplete")}},
		{"id": "evt_updated", "type": "customer.subscription.updated", "data": map[string]any{"object": sub("active"), "previous_attributes": map[string]any{"status": "incomplete"}}},
		{"id": "evt_paid", "type": "invoice.payment_succeeded", "data": map[string]any{"object": map[string]any{
			"object": "invoice", "customer": "cus_new", "parent": map[string]any{"subscription_details": map[string]any{"subscription": "sub_from_checkout"}},
			"lines": map[string]any{"data": []map[string]any{{"period": map[string]any{"end": now + 30*86400}}}}}}},
	}
	for _, ev := range events {
		ev["object"], ev["created"] = "event", now
		body, _ := json.Marshal(ev)
		if _, err := h.ingest(billing.ProviderWeb, ev["id"].(string), ev["type"].(string), body); err != nil {
			t.Fatal(err)
		}
	}
	var me struct {
		Billing struct {
			Subscribed bool
			Plan       struct{ Key string }
		}
	}
	rec := h.me(bearer(token))
	mustStatus(t, rec, http.StatusOK)
	json.Unmarshal(rec.Body.Bytes(), &me)
	if !me.Billing.Subscribed || me.Billing.Plan.Key != "pro" {
		t.Fatalf("after the checkout's events: %s", rec.Body)
	}
	// And the customer is linked: the portal opens.
	mustStatus(t, h.post("/api/v1/billing/portal", token, ``), http.StatusOK)
}

// Stripe's mock validates the session requests against the provider's OpenAPI description.
func TestCheckoutAndPortalAgainstStripeMock(t *testing.T) {
	h := newCheckoutHarness(t, dbtest.SQLite(t), stripemock.Start(t))
	token := h.key.mint(t, validClaims())
	mustStatus(t, h.post("/api/v1/billing/checkout", token, `{"plan":"pro"}`), http.StatusOK)
	h.subscribe(t, "sub_mock", testUser, "cus_mock", "price_pro_monthly")
	mustStatus(t, h.post("/api/v1/billing/checkout", token, `{"plan":"enterprise","success_url":"https://www.example.test/ok"}`), http.StatusOK)
	mustStatus(t, h.post("/api/v1/billing/portal", token, ``), http.StatusOK)
}

// TestMobileSubscriberIsToldWhereToManage: a user whom only a subscription bought in the
// mobile app entitles gets one answer from checkout (any plan) and from the portal: 409
// …/managed-in-app, naming the app's store. Nothing reaches the web provider.
func TestMobileSubscriberIsToldWhereToManage(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		provider := &fakeProvider{}
		srv := httptest.NewServer(provider)
		defer srv.Close()
		h := newCheckoutHarness(t, d, srv.URL)
		raw, err := os.ReadFile("../billing/testdata/mobile/subscription_started.json")
		if err != nil {
			t.Fatal(err)
		}
		event, err := adapty.ForUser(raw, testUser)
		if err == nil {
			event, err = adapty.MoveToNow([]byte(strings.ReplaceAll(string(event), "com.example.app.pro.monthly", "com.example.team")), time.Now())
		}
		if err != nil {
			t.Fatal(err)
		}
		if done, err := h.ingest(billing.ProviderMobile, "mobile_team_1", "subscription_started", event); err != nil || done.Outcome != "applied" {
			t.Fatalf("the mobile subscription: %+v %v", done, err)
		}
		token := h.key.mint(t, validClaims())
		for _, call := range []struct{ path, body string }{
			{"/api/v1/billing/checkout", `{"plan":"enterprise"}`}, {"/api/v1/billing/checkout", `{"plan":"pro"}`}, {"/api/v1/billing/portal", ``},
		} {
			rec := h.post(call.path, token, call.body)
			mustStatus(t, rec, http.StatusConflict)
			if problemType(rec) != "managed-in-app" || !strings.Contains(rec.Body.String(), "App Store or Google Play") {
				t.Fatalf("%s %s: %s", call.path, call.body, rec.Body)
			}
		}
		if path, _ := provider.last(); path != "" {
			t.Fatalf("the web provider was asked for %s", path)
		}
	})
}
