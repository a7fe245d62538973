package app

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
)

// checkoutStandIn is the web provider for a browser's purchase: it creates the session,
// serves its payment page (a link back to the success URL, as Stripe redirects), and
// answers the session's read-back with a subscription once paid says so — never a webhook.
type checkoutStandIn struct {
	mu         sync.Mutex
	user       string // the session's client_reference_id
	successURL string
	paid       atomic.Bool
}

func (c *checkoutStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/checkout/sessions":
		r.ParseForm()
		c.user, c.successURL = r.PostForm.Get("client_reference_id"), r.PostForm.Get("success_url")
		fmt.Fprintf(w, `{"id":"cs_test_return","url":"http://%s/c/pay/cs_test_return"}`, r.Host)
	case r.URL.Path == "/c/pay/cs_test_return":
		back := strings.ReplaceAll(c.successURL, "{CHECKOUT_SESSION_ID}", "cs_test_return")
		fmt.Fprintf(w, `<!doctype html><title>Checkout</title><a id="pay" href="%s">Pay</a>`, back)
	case r.URL.Path == "/v1/checkout/sessions/cs_test_return" && r.URL.Query().Get("expand[0]") == "subscription":
		subscription := "null"
		if c.paid.Load() {
			now := time.Now().Unix()
			subscription = fmt.Sprintf(`{"id":"sub_return","object":"subscription","customer":"cus_return","status":"active","created":%d,
				"metadata":{"user_id":"%s"},"items":{"object":"list","data":[{"price":{"id":"price_1TESTmonthlyPro000001"},"current_period_end":%d}]}}`,
				now, c.user, now+30*86400)
		}
		fmt.Fprintf(w, `{"id":"cs_test_return","object":"checkout.session","client_reference_id":"%s","status":"complete","payment_status":"unpaid","subscription":%s}`,
			c.user, subscription)
	default: // as the provider answers an id it does not know
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such checkout.session"}}`)
	}
}

// TestBrowserPurchaseReturn: sign in, Upgrade, pay on the (stand-in) checkout, come back:
// while the provider says the payment is processing, a page says so and checks again;
// once the subscription is active the account page shows Pro — and no webhook was sent.
func TestBrowserPurchaseReturn(t *testing.T) {
	t.Parallel() // its own server and browser; browser lets two run at once
	ctx := browser(t)
	fake := identitytest.New(t)
	fake.Autoconfirm = true
	provider := &checkoutStandIn{}
	srv := httptest.NewServer(provider)
	defer srv.Close()
	env := testEnv(t, map[string]string{"APP_ENV": "development", "AUTH_URL": fake.URL, "WEB_API_KEY": "sk_test_return", "WEB_API_BASE": srv.URL})
	startServe(t, env)
	base := env["PUBLIC_URL"]
	tab := newTab(t, ctx, base)

	tab.run("sign up", chromedp.Navigate(base+"/registration/new"), chromedp.WaitVisible(chromedp.CSS("#email")),
		chromedp.SendKeys(chromedp.CSS("#email"), "returning@example.test"), chromedp.SendKeys(chromedp.CSS("#password"), "a-good-password"),
		chromedp.Submit(chromedp.CSS("#password")), chromedp.WaitVisible(chromedp.CSS("form.upgrade button")))
	tab.run("upgrade and pay", chromedp.Click(chromedp.CSS("form.upgrade button")), chromedp.WaitVisible(chromedp.CSS("#pay")),
		chromedp.Click(chromedp.CSS("#pay")), chromedp.WaitVisible(chromedp.CSS("h1")))
	if !strings.Contains(tab.eval(`document.body.innerHTML`), "notice") {
		t.Fatalf("back from checkout at %s: %s", tab.location(), tab.eval(`document.body.innerText`))
	}
	tab.run("look", screenshotAtWidths("purchase-waiting"))
	provider.mu.Lock()
	success := provider.successURL
	provider.mu.Unlock()
	if success != base+"/billing/return?session_id={CHECKOUT_SESSION_ID}" {
		t.Fatalf("success_url %q", success)
	}
	if at := tab.location(); !strings.HasPrefix(at, "/billing/return?") || !strings.Contains(tab.text(".notice"), "being processed") {
		t.Fatalf("while processing, at %s: %q", at, tab.text(".notice"))
	}
	provider.paid.Store(true)
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(waitCtx, chromedp.WaitVisible(chromedp.CSS("dl.account"))); err != nil {
		t.Fatalf("the waiting page did not move on: %v (at %s)", err, tab.location())
	}
	if at, account := tab.location(), tab.text("dl.account"); at != "/" || !strings.Contains(account, "Pro") || tab.text(".notice") != "Thank you! You are now on Pro." {
		t.Fatalf("after payment, at %s: %q, notice %q", at, account, tab.text(".notice"))
	}

	// Another user's session is refused, and nothing changes.
	tab.run("another's session", chromedp.Navigate(base+"/billing/return?session_id=cs_unknown"), chromedp.WaitVisible(chromedp.CSS(".alert")))
	if tab.text(".alert") != billing.ErrCheckoutOfAnother.Detail {
		t.Fatalf("another's session: %q", tab.text(".alert"))
	}
}
