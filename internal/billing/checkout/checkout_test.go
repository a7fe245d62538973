package checkout_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/checkout"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

const (
	publicURL = "https://app.example.test"
	proPrice  = "price_1TESTmonthlyPro000001"
)

// provider stands in for the web provider's Checkout Sessions: it records each session's
// form and answers its URL, or refuses with status when set.
type provider struct {
	*httptest.Server
	mu     sync.Mutex
	forms  []url.Values
	status int
}

func newProvider(t *testing.T) *provider {
	p := &provider{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		p.mu.Lock()
		p.forms = append(p.forms, r.PostForm)
		status := p.status
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if status != 0 {
			w.WriteHeader(status)
			w.Write([]byte(`{"error":{"type":"card_error","message":"refused for the test"}}`))
			return
		}
		w.Write([]byte(`{"id":"cs_test_1","object":"checkout.session","url":"https://checkout.provider.test/c/cs_test_1"}`))
	}))
	t.Cleanup(p.Close)
	return p
}

// sessions are the forms of the sessions asked for so far.
func (p *provider) sessions() []url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]url.Values(nil), p.forms...)
}

// refuse makes the provider refuse every session with status.
func (p *provider) refuse(status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status = status
}

func newCheckout(t *testing.T, api *stripe.Client) (*checkout.Checkout, *billingtest.Harness) {
	t.Helper()
	h := billingtest.New(t, dbtest.SQLite(t))
	var stores []billing.WebStore // none without an API key
	if api != nil {
		stores = append(stores, stripe.WebStore(api))
	}
	return checkout.New(h.DB, h.Log, h.Svc.Reader, checkout.Options{Stores: stores, Known: []string{billing.ProviderWeb}, SoldInApp: billingtest.SoldInApp, PublicURL: publicURL,
		RedirectOrigins: []string{"https://shop.example.test"}, Applier: h.Svc.Pipeline}), h
}

// TestStartAsksForTheRightSession: a purchase of pro asks the provider for a subscription
// session of the plan's first price, carrying the buyer in client_reference_id and the
// subscription's metadata, returning to PUBLIC_URL unless an allowed origin is given; it
// answers the session's URL.
func TestStartAsksForTheRightSession(t *testing.T) {
	t.Parallel()
	p := newProvider(t)
	c, _ := newCheckout(t, stripe.NewClient(stripe.Config{Key: "sk_test_checkout", Base: p.URL, Attempts: 1}))
	buyer := checkout.Buyer{UserID: "0b7f6c2e-1111-4222-8333-444455556666", Email: "buyer@example.test"}
	got, err := c.Start(context.Background(), buyer, checkout.Request{Plan: "pro"})
	if err != nil || got != "https://checkout.provider.test/c/cs_test_1" {
		t.Fatalf("start: %q %v", got, err)
	}
	_, err = c.Start(context.Background(), buyer, checkout.Request{Plan: "pro", Price: "price_old_shape", SuccessURL: "https://shop.example.test/thanks"})
	if err != nil {
		t.Fatal(err)
	}
	sessions := p.sessions()
	first, second := sessions[0], sessions[1]
	for name, want := range map[string]string{
		"mode": "subscription", "line_items[0][price]": proPrice, "client_reference_id": buyer.UserID,
		"subscription_data[metadata][user_id]": buyer.UserID, "customer_email": buyer.Email,
		"success_url": publicURL + "/?checkout=success", "cancel_url": publicURL + "/?checkout=cancel",
	} {
		if first.Get(name) != want {
			t.Errorf("%s = %q, want %q", name, first.Get(name), want)
		}
	}
	if second.Get("line_items[0][price]") != "price_old_shape" || second.Get("success_url") != "https://shop.example.test/thanks" {
		t.Errorf("the second session: %v", second)
	}
}

// TestStartRefuses: what can never be bought is refused before the provider is asked, by
// kind; a provider's refusal is a provider failure.
func TestStartRefuses(t *testing.T) {
	t.Parallel()
	p := newProvider(t)
	c, h := newCheckout(t, stripe.NewClient(stripe.Config{Key: "sk_test_checkout", Base: p.URL, Attempts: 1}))
	ctx := context.Background()
	buyer := checkout.Buyer{UserID: billingtest.FixtureUser}
	for name, tc := range map[string]struct {
		req  checkout.Request
		want error
	}{
		"an unknown plan":         {checkout.Request{Plan: "platinum"}, billing.ErrUnknownPlan},
		"a plan not on the web":   {checkout.Request{Plan: "free"}, billing.ErrPlanNotOnWeb},
		"another plan's price":    {checkout.Request{Plan: "pro", Price: "price_elsewhere"}, billing.ErrForeignPrice},
		"a stranger's return":     {checkout.Request{Plan: "pro", SuccessURL: "https://evil.example/thanks"}, billing.ErrRedirectOrigin},
		"a return that is no URL": {checkout.Request{Plan: "pro", CancelURL: "javascript:alert(1)"}, billing.ErrRedirectOrigin},
	} {
		if _, err := c.Start(ctx, buyer, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if n := len(p.sessions()); n != 0 {
		t.Fatalf("the provider was asked %d times for what was refused", n)
	}
	body, err := stripe.MoveToNow(billingtest.Fixture(t, "web/customer.subscription.updated.json"), h.Clock().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if rec := h.SendWeb(body); rec.Code != http.StatusOK {
		t.Fatalf("subscription: %d %s", rec.Code, rec.Body)
	}
	if _, err := c.Start(ctx, buyer, checkout.Request{Plan: "pro"}); !errors.Is(err, billing.ErrAlreadySubscribed) {
		t.Fatalf("a subscriber buying the plan again: %v", err)
	}
	p.refuse(http.StatusPaymentRequired)
	var failed *billing.ProviderError
	if _, err := c.Start(ctx, checkout.Buyer{UserID: "someone-new"}, checkout.Request{Plan: "pro"}); !errors.As(err, &failed) || failed.Status != http.StatusPaymentRequired {
		t.Fatalf("the provider refusing: %v", err)
	}
	unconfigured, _ := newCheckout(t, nil)
	if _, err := unconfigured.Start(ctx, buyer, checkout.Request{Plan: "pro"}); !errors.Is(err, billing.ErrCheckoutUnavailable) {
		t.Fatalf("without WEB_API_KEY: %v", err)
	}
}
