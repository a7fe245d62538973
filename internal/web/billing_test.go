package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/adapty"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/checkout"
	"github.com/tollgate/tollgate/internal/billing/grant"
	"github.com/tollgate/tollgate/internal/billing/grants"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

const accountPlans = `
plans:
  free: {default: true, entitlements: [{name: projects, value: 1}]}
  pro: {name: Pro, entitlements: [{name: projects, value: 10}], web_prices: [price_pro]}
  team: {name: Team, entitlements: [{name: projects, value: 50}], mobile_products: [com.example.team]}
  enterprise: {name: Enterprise, entitlements: [{name: projects, value: 500}], web_prices: [price_enterprise]}
`

// newBillingHarness is the forms over a billing service whose web provider is provider.
// billingParts are the pipeline that applies events and the reader the forms answer from.
type billingParts struct {
	*pipeline.Pipeline
	reader *reader.Reader
	db     *db.DB
}

func newBillingHarness(t *testing.T, provider *httptest.Server) (*harness, billingParts) {
	d := dbtest.SQLite(t)
	log := slog.New(slog.DiscardHandler)
	r := reader.New(d, log, reader.Options{})
	p := pipeline.New(d, log, pipeline.Options{Adapters: []billing.Adapter{stripe.New(""), adapty.New("", nil), grant.New()}})
	p.OnCommit(r.Forget)
	c := checkout.New(d, log, r, checkout.Options{
		PublicURL: "http://forms.example.test", Stores: []billing.WebStore{stripe.WebStore(stripe.NewClient(stripe.Config{Key: "sk_test_forms", Base: provider.URL}))}, SoldInApp: billingtest.SoldInApp,
		Applier: p,
	})
	list, err := plans.ParsePlans([]byte(accountPlans))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plans.Sync(context.Background(), d, list, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	return newHarness(t, harnessOpts{db: d, billing: r, checkout: c, checkoutPages: stripe.PageOrigins(provider.URL)}), billingParts{p, r, d}
}

func TestAccountPageStartsCheckoutAndOpensThePortal(t *testing.T) {
	var sessions []string
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		sessions = append(sessions, r.URL.Path+" "+r.PostForm.Get("line_items[0][price]")+r.PostForm.Get("customer"))
		fmt.Fprintf(w, `{"url":"%s/pay/%d"}`, "http://"+r.Host, len(sessions))
	}))
	defer provider.Close()
	h, b := newBillingHarness(t, provider)

	// Signed out, the buttons' routes send to sign in.
	if r := h.post("/account/checkout", url.Values{"plan": {"pro"}}); r.status != http.StatusSeeOther || r.location != "/session/new" {
		t.Fatalf("signed out: %d %s", r.status, r.location)
	}

	userID := h.fake.AddUser("ada@example.test", "correct horse battery")
	h.post("/session", url.Values{"email": {"ada@example.test"}, "password": {"correct horse battery"}})
	account := h.get("/")
	page := doc(t, account.body)
	upgrades := find(page, "form", map[string]string{"action": "/account/checkout"})
	if len(upgrades) != 2 || !strings.Contains(text(upgrades[0]), "Upgrade to Pro") || !strings.Contains(text(upgrades[1]), "Upgrade to Enterprise") {
		t.Fatalf("upgrade forms: %d\n%s", len(upgrades), account.body)
	}
	if len(find(page, "form", map[string]string{"action": "/account/portal"})) != 0 {
		t.Fatal("Manage billing offered without a web customer")
	}
	if csp := account.header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' "+provider.URL+";") {
		t.Fatalf("CSP %q does not let the form reach the provider's pages", csp)
	}

	// Upgrade: 303 to the provider's page; a cross-site post is refused first.
	if r := h.post("/account/checkout", url.Values{"plan": {"pro"}}, "Sec-Fetch-Site", "cross-site"); r.status != http.StatusForbidden {
		t.Fatalf("cross-site checkout: %d", r.status)
	}
	r := h.post("/account/checkout", url.Values{"plan": {"pro"}}, "Sec-Fetch-Site", "same-origin")
	if r.status != http.StatusSeeOther || r.location != provider.URL+"/pay/1" || sessions[0] != "/v1/checkout/sessions price_pro" {
		t.Fatalf("checkout: %d %s %v", r.status, r.location, sessions)
	}
	if notice := flash(t, h.get("/?checkout=success").body, "notice"); !strings.Contains(notice, "as soon as the payment is confirmed") {
		t.Fatalf("back from checkout: notice %q", notice)
	}

	// Once subscribed through a customer: only the higher plan, Manage billing, the portal.
	now := time.Now().Unix()
	event := fmt.Sprintf(`{"id":"evt_1","object":"event","type":"customer.subscription.created","created":%d,"data":{"object":{
		"id":"sub_1","object":"subscription","customer":"cus_ada","status":"active","created":%d,"metadata":{"user_id":"%s"},
		"items":{"data":[{"price":{"id":"price_pro"},"current_period_end":%d}]}}}}`, now, now, userID, now+86400)
	if _, err := b.Ingest(context.Background(), billing.ProviderWeb, billing.Event{ID: "evt_1", Type: "customer.subscription.created"}, []byte(event)); err != nil {
		t.Fatal(err)
	}
	page = doc(t, h.get("/").body)
	upgrades = find(page, "form", map[string]string{"action": "/account/checkout"})
	if len(upgrades) != 1 || !strings.Contains(text(upgrades[0]), "Upgrade to Enterprise") || len(find(page, "form", map[string]string{"action": "/account/portal"})) != 1 {
		t.Fatalf("subscribed account page offers %d upgrades", len(upgrades))
	}
	if r := h.post("/account/portal", nil); r.status != http.StatusSeeOther || r.location != provider.URL+"/pay/2" || sessions[1] != "/v1/billing_portal/sessions cus_ada" {
		t.Fatalf("portal: %d %s %v", r.status, r.location, sessions)
	}
	r = h.post("/account/checkout", url.Values{"plan": {"pro"}})
	if r.status != http.StatusSeeOther || r.location != "/" || flash(t, h.get("/").body, "alert") != billing.ErrAlreadySubscribed.Detail {
		t.Fatalf("buying pro again: %d %s", r.status, r.location)
	}
}

// TestAGrantedPlanIsStillForSale: a user granted Pro sees it on the account page, and is
// still offered Pro (a grant ends by itself; buying is how it is kept), which checkout
// starts rather than calling them subscribed already.
func TestAGrantedPlanIsStillForSale(t *testing.T) {
	var sessions []string
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sessions = append(sessions, r.URL.Path)
		fmt.Fprintf(w, `{"url":"%s/pay/%d"}`, "http://"+r.Host, len(sessions))
	}))
	defer provider.Close()
	h, b := newBillingHarness(t, provider)
	userID := h.fake.AddUser("grace@example.test", "correct horse battery")
	h.post("/session", url.Values{"email": {"grace@example.test"}, "password": {"correct horse battery"}})
	given := grants.New(b.db, b.Pipeline, slog.New(slog.DiscardHandler), nil)
	if _, err := given.Add(context.Background(), grants.Request{UserID: userID, Plan: "pro", For: 24 * time.Hour, Reason: "beta", By: "cli:test"}); err != nil {
		t.Fatal(err)
	}
	account := h.get("/")
	page := doc(t, account.body)
	upgrades := find(page, "form", map[string]string{"action": "/account/checkout"})
	if !strings.Contains(account.body, "Pro") || len(upgrades) != 2 || !strings.Contains(text(upgrades[0]), "Upgrade to Pro") {
		t.Fatalf("granted Pro, the account page offers %d:\n%s", len(upgrades), account.body)
	}
	if r := h.post("/account/checkout", url.Values{"plan": {"pro"}}); r.status != http.StatusSeeOther || r.location != provider.URL+"/pay/1" {
		t.Fatalf("buying the granted plan: %d %s", r.status, r.location)
	}
}

// TestAccountPageForAMobileSubscriberAndUsage: a user whom only a subscription bought in
// the app entitles is offered nothing to buy and told where it is managed, the same words
// the buttons' routes answer with; a metered entitlement shows this period's use of it.
func TestAccountPageForAMobileSubscriberAndUsage(t *testing.T) {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the web provider was asked for %s", r.URL.Path)
	}))
	defer provider.Close()
	h, b := newBillingHarness(t, provider)
	userID := h.fake.AddUser("app@example.test", "correct horse battery")
	event := fmt.Sprintf(`{"event_type":"subscription_started","profile_id":"p1","customer_user_id":%q,
		"event_datetime":%q,"event_properties":{"vendor_product_id":"com.example.team","store":"app_store",
		"transaction_id":"t1","original_transaction_id":"t1","expires_at":%q,"purchase_date":%q}}`, userID,
		time.Now().UTC().Format("2006-01-02T15:04:05.000000-0700"), time.Now().Add(30*24*time.Hour).UTC().Format("2006-01-02T15:04:05.000000-0700"),
		time.Now().UTC().Format("2006-01-02T15:04:05.000000-0700"))
	if done, err := b.Ingest(context.Background(), billing.ProviderMobile, billing.Event{ID: "m1", Type: "subscription_started"}, []byte(event)); err != nil || done.Outcome != "applied" {
		t.Fatalf("mobile subscription: %+v %v", done, err)
	}
	for range 4 {
		if _, err := b.reader.RecordUsage(context.Background(), userID, "projects", 1); err != nil {
			t.Fatal(err)
		}
	}
	h.post("/session", url.Values{"email": {"app@example.test"}, "password": {"correct horse battery"}})
	account := h.get("/")
	page := doc(t, account.body)
	if n := len(find(page, "form", map[string]string{"action": "/account/checkout"})); n != 0 {
		t.Fatalf("%d upgrades offered beside a subscription bought in the app", n)
	}
	if !strings.Contains(account.body, "App Store or Google Play") {
		t.Fatalf("the page does not say where the subscription is managed:\n%s", account.body)
	}
	if !strings.Contains(account.body, "projects: 4 of 50") {
		t.Fatalf("usage not shown as 4 of 50:\n%s", account.body)
	}
	for _, path := range []string{"/account/checkout", "/account/portal"} {
		r := h.post(path, url.Values{"plan": {"enterprise"}})
		if alert := flash(t, h.get("/").body, "alert"); r.status != http.StatusSeeOther || !strings.Contains(alert, "App Store or Google Play") {
			t.Fatalf("%s: %d, alert %q", path, r.status, alert)
		}
	}
}

// Back from checkout, the notice says what the account page shows: the plan the purchase
// applied, or, when the read applied no plan (a price in no plan yet), that it has not
// changed — never that a plan is active above a page that shows Free.
func TestPurchaseReturnSaysWhatWasApplied(t *testing.T) {
	var mu sync.Mutex
	var userID string
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		id := strings.TrimPrefix(r.URL.Path, "/v1/checkout/sessions/")
		price := map[string]string{"cs_pro": "price_pro", "cs_unmapped": "price_in_no_plan"}[id]
		now := time.Now().Unix()
		fmt.Fprintf(w, `{"id":"%s","object":"checkout.session","client_reference_id":"%s","status":"complete","subscription":{
			"id":"sub_%s","object":"subscription","customer":"cus_%s","status":"active","created":%d,"metadata":{"user_id":"%s"},
			"items":{"data":[{"price":{"id":"%s"},"current_period_end":%d}]}}}`, id, userID, id, id, now, userID, price, now+86400)
	}))
	defer provider.Close()
	for _, tc := range []struct{ session, notice, plan string }{
		{"cs_unmapped", "Thank you! Your plan here has not changed yet: it changes as soon as the payment provider confirms the purchase.", "Planfree"},
		{"cs_pro", "Thank you! You are now on Pro.", "PlanPro"},
	} {
		h, _ := newBillingHarness(t, provider)
		mu.Lock()
		userID = h.fake.AddUser("ada@example.test", "correct horse battery")
		mu.Unlock()
		h.post("/session", url.Values{"email": {"ada@example.test"}, "password": {"correct horse battery"}})
		r := h.get("/billing/return?session_id=" + tc.session)
		if r.status != http.StatusSeeOther || r.location != "/" {
			t.Fatalf("%s: %d %s", tc.session, r.status, r.location)
		}
		account := h.get("/").body
		if notice := flash(t, account, "notice"); notice != tc.notice {
			t.Errorf("%s: notice %q, want %q", tc.session, notice, tc.notice)
		}
		if plan := text(find(doc(t, account), "dl", map[string]string{"class": "account"})[0]); !strings.Contains(plan, tc.plan) {
			t.Errorf("%s: the account shows %q, want %s", tc.session, plan, tc.plan)
		}
	}
}
