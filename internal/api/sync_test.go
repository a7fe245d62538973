package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/checkout"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// sessionsProvider stands in for the web provider's reads of checkout sessions and of a
// customer's subscriptions, as a test scripts them.
type sessionsProvider struct {
	mu       sync.Mutex
	sessions map[string]string // id → the session's JSON, subscription expanded
	subs     map[string]string // customer → the list's data array
	reads    int
}

func (p *sessionsProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reads++
	switch {
	case strings.HasPrefix(r.URL.Path, "/v1/checkout/sessions/") && r.URL.Query().Get("expand[0]") == "subscription":
		body, ok := p.sessions[strings.TrimPrefix(r.URL.Path, "/v1/checkout/sessions/")]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"type":"invalid_request_error","message":"No such checkout.session"}}`)
			return
		}
		fmt.Fprint(w, body)
	case r.URL.Path == "/v1/subscriptions" && r.URL.Query().Get("status") == "all":
		fmt.Fprintf(w, `{"object":"list","has_more":false,"data":[%s]}`, p.subs[r.URL.Query().Get("customer")])
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"type":"invalid_request_error","message":"unexpected"}}`)
	}
}

// webSubscription is a subscription object as the provider's API returns it.
func webSubscription(id, customer, user, status, price string) string {
	now := time.Now().Unix()
	return fmt.Sprintf(`{"id":"%s","object":"subscription","customer":"%s","status":"%s","created":%d,"metadata":{"user_id":"%s"},
		"items":{"object":"list","data":[{"price":{"id":"%s","unit_amount":1500,"currency":"usd","recurring":{"interval":"month","interval_count":1}},"quantity":1,"current_period_end":%d}]}}`,
		id, customer, status, now, user, price, now+30*86400)
}

func checkoutSession(id, reference, subscription string) string {
	if subscription == "" {
		subscription = "null"
	}
	return fmt.Sprintf(`{"id":"%s","object":"checkout.session","client_reference_id":"%s","status":"complete","payment_status":"paid","subscription":%s}`,
		id, reference, subscription)
}

// TestSyncReadsThePurchaseBack: an app calls the sync after its purchase UI closes and gets
// the new plan without any webhook; another user's session is refused and applies nothing;
// a payment still processing answers not subscribed yet; the call is throttled per user.
func TestSyncReadsThePurchaseBack(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		const other = "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d"
		provider := &sessionsProvider{sessions: map[string]string{
			"cs_mine":       checkoutSession("cs_mine", testUser, webSubscription("sub_mine", "cus_mine", testUser, "active", "price_pro_monthly")),
			"cs_other":      checkoutSession("cs_other", other, webSubscription("sub_other", "cus_other", other, "active", "price_pro_monthly")),
			"cs_processing": checkoutSession("cs_processing", testUser, ""),
		}, subs: map[string]string{}}
		srv := httptest.NewServer(provider)
		defer srv.Close()
		h := newCheckoutHarness(t, d, srv.URL)
		token := h.key.mint(t, validClaims())
		plan := func(rec *httptest.ResponseRecorder) string {
			t.Helper()
			var me struct {
				Billing struct {
					Subscribed bool `json:"subscribed"`
					Plan       struct {
						Key string `json:"key"`
					} `json:"plan"`
				} `json:"billing"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &me); err != nil {
				t.Fatalf("%s: %v", rec.Body, err)
			}
			return fmt.Sprintf("%v %s", me.Billing.Subscribed, me.Billing.Plan.Key)
		}

		rec := h.post(syncPath, token, `{"session_id":"cs_processing"}`)
		mustStatus(t, rec, http.StatusOK)
		if got := plan(rec); got != "false free" {
			t.Fatalf("payment still processing: %s", got)
		}
		rec = h.post(syncPath, token, `{"session_id":"cs_other"}`)
		mustStatus(t, rec, http.StatusForbidden)
		if problemType(rec) != "checkout-of-another" {
			t.Fatalf("another's session: %s", rec.Body)
		}
		mustStatus(t, h.post(syncPath, token, `{"session_id":"cs_nobody"}`), http.StatusForbidden)
		rec = h.post(syncPath, token, `{"session_id":"cs_mine"}`)
		mustStatus(t, rec, http.StatusOK)
		if got := plan(rec); got != "true pro" {
			t.Fatalf("after the sync: %s", got)
		}
		if n := countSubscriptions(t, d); n != 1 {
			t.Fatalf("%d subscriptions stored: another's session applied something", n)
		}

		// Without a session: every subscription of the user's web customer, linked by now,
		// such as one bought elsewhere whose webhook has not come.
		provider.mu.Lock()
		provider.subs["cus_mine"] = webSubscription("sub_mine", "cus_mine", testUser, "active", "price_pro_monthly") + "," +
			webSubscription("sub_bought_elsewhere", "cus_mine", "", "active", "price_enterprise")
		provider.mu.Unlock()
		rec = h.post(syncPath, token, ``)
		mustStatus(t, rec, http.StatusOK)
		if got := plan(rec); got != "true enterprise" {
			t.Fatalf("after the customer's subscriptions were read: %s", got)
		}

		for i := 0; ; i++ { // 5 calls so far; the 11th in the minute is refused
			rec = h.post(syncPath, token, ``)
			if rec.Code == http.StatusTooManyRequests {
				if i != 5 || rec.Header().Get("Retry-After") == "" {
					t.Fatalf("throttled at call %d, Retry-After %q", i+5, rec.Header().Get("Retry-After"))
				}
				break
			}
			if i > 10 {
				t.Fatal("the sync is not throttled per user")
			}
		}
	})
}

func countSubscriptions(t *testing.T, d *db.DB) int {
	t.Helper()
	var n int
	if err := d.QueryRow("select count(*) from subscriptions").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Two syncs in the same second, the provider's answer changing from incomplete to active
// between them: the second read is newer than the first and applies active.
func TestSyncLaterReadOfTheSameSecondWins(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		provider := &sessionsProvider{sessions: map[string]string{
			"cs_paying": checkoutSession("cs_paying", testUser, webSubscription("sub_paying", "cus_paying", testUser, "incomplete", "price_pro_monthly")),
		}, subs: map[string]string{}}
		srv := httptest.NewServer(provider)
		defer srv.Close()
		second := time.Now().Truncate(time.Second)
		var mu sync.Mutex
		now := second.Add(100 * time.Millisecond)
		clock := func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return now
		}
		h := newHarness(t, harnessConfig{db: d, plans: checkoutPlans, clock: clock, checkout: &checkout.Options{
			PublicURL: checkoutPublicURL, RedirectOrigins: []string{"https://www.example.test"},
			Stores: []billing.WebStore{stripe.WebStore(stripe.NewClient(stripe.Config{Key: checkoutKey, Base: srv.URL}))}, SoldInApp: billingtest.SoldInApp,
		}})
		token := h.key.mint(t, validClaims())
		subscribed := func() bool {
			t.Helper()
			rec := h.post(syncPath, token, `{"session_id":"cs_paying"}`)
			mustStatus(t, rec, http.StatusOK)
			var me struct {
				Billing struct {
					Subscribed bool `json:"subscribed"`
				} `json:"billing"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &me); err != nil {
				t.Fatal(err)
			}
			return me.Billing.Subscribed
		}
		if subscribed() {
			t.Fatal("subscribed while the payment is incomplete")
		}
		provider.mu.Lock()
		provider.sessions["cs_paying"] = checkoutSession("cs_paying", testUser, webSubscription("sub_paying", "cus_paying", testUser, "active", "price_pro_monthly"))
		provider.mu.Unlock()
		mu.Lock()
		now = second.Add(600 * time.Millisecond)
		mu.Unlock()
		if !subscribed() {
			t.Fatal("the second read of the same second, active, was not applied")
		}
	})
}
