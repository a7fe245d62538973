package stripe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/stripe/stripemock"
)

// Stripe's mock validates each request against the provider's OpenAPI description: a
// wrong parameter name, value or type is refused there as the real API would.
func TestSubscriptionsAgainstStripeMock(t *testing.T) {
	base := stripemock.Start(t)
	c := NewClient(Config{Key: "sk_test_123", Base: base, Attempts: 1})
	queries := []SubscriptionQuery{
		{},
		{Limit: 3, StartingAfter: "sub_123"},
		{Customer: "cus_123", CreatedSince: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, q := range queries {
		page, err := c.Subscriptions(context.Background(), q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		var first struct{ Object, ID string }
		if len(page.Subscriptions) == 0 || json.Unmarshal(page.Subscriptions[0], &first) != nil || first.Object != "subscription" || page.LastID == "" {
			t.Fatalf("%+v: %d subscriptions, first %+v, last id %q", q, len(page.Subscriptions), first, page.LastID)
		}
	}

	// The mock checks the key's shape: a bad one is refused, and the key is not echoed.
	_, err := NewClient(Config{Key: "sk_test_", Base: base, Attempts: 1}).Subscriptions(context.Background(), SubscriptionQuery{})
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized {
		t.Fatalf("bad key: %v", err)
	}
}

func TestSubscriptionsSendsTheQuery(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		fmt.Fprint(w, `{"object":"list","data":[{"id":"sub_a"},{"id":"sub_b"}],"has_more":true}`)
	}))
	defer srv.Close()
	page, err := NewClient(Config{Key: "sk_test_key", Base: srv.URL}).Subscriptions(context.Background(), SubscriptionQuery{
		Customer: "cus_9", StartingAfter: "sub_z", CreatedSince: time.Unix(1790000000, 0), Limit: 50,
	})
	if err != nil {
		t.Fatal(err)
	}
	query := got.URL.Query().Encode() // sorted by name
	want := "created[gte]=1790000000&customer=cus_9&limit=50&starting_after=sub_z&status=all"
	if got.Method != http.MethodGet || got.URL.Path != "/v1/subscriptions" || unescape(query) != want {
		t.Fatalf("request %s %s?%s, want GET /v1/subscriptions?%s", got.Method, got.URL.Path, unescape(query), want)
	}
	if got.Header.Get("Authorization") != "Bearer sk_test_key" || got.Header.Get("Stripe-Version") == "" {
		t.Fatalf("headers %v", got.Header)
	}
	if !page.HasMore || page.LastID != "sub_b" || len(page.Subscriptions) != 2 {
		t.Fatalf("page %+v", page)
	}
}

func unescape(s string) string {
	return strings.NewReplacer("%5B", "[", "%5D", "]", "%3A", ":", "%2F", "/", "%3F", "?", "%3D", "=", "%40", "@").Replace(s)
}

func TestSubscriptionsWaitsOutFailures(t *testing.T) {
	cases := []struct {
		name     string
		failures []func(w http.ResponseWriter)
		attempts int
		wantErr  string // empty: the page arrives
		waits    int
	}{
		{name: "rate limited twice, honouring Retry-After", failures: []func(http.ResponseWriter){rateLimited("1"), rateLimited("")}, waits: 2},
		{name: "a 500 and a proxy's HTML page", failures: []func(http.ResponseWriter){status(500, `{"error":{"type":"api_error","message":"boom"}}`), status(502, "<html>bad gateway</html>")}, waits: 2},
		{name: "rate limited past the attempts", failures: []func(http.ResponseWriter){rateLimited(""), rateLimited(""), rateLimited("")}, attempts: 3, wantErr: "web provider API: rate limited (429) (gave up after 3 attempts)", waits: 2},
		{name: "a refused key is not retried", failures: []func(http.ResponseWriter){status(401, `{"error":{"type":"invalid_request_error","message":"Invalid API Key provided: sk_live_****************abcd"}}`)}, wantErr: "web provider API refused WEB_API_KEY (401): Invalid API Key provided: [key]"},
		{name: "a bad request is not retried", failures: []func(http.ResponseWriter){status(400, `{"error":{"type":"invalid_request_error","message":"Received unknown parameter: bogus"}}`)}, wantErr: "web provider API: 400: Received unknown parameter: bogus"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n := int(calls.Add(1)); n <= len(tc.failures) {
					tc.failures[n-1](w)
					return
				}
				fmt.Fprint(w, `{"object":"list","data":[{"id":"sub_a"}],"has_more":false}`)
			}))
			defer srv.Close()
			var waits []time.Duration
			c := NewClient(Config{Key: "sk_live_secretvalue", Base: srv.URL, Attempts: tc.attempts, FirstWait: time.Millisecond,
				OnWait: func(wait time.Duration, why string) { waits = append(waits, wait) }})
			page, err := c.Subscriptions(context.Background(), SubscriptionQuery{})
			switch {
			case tc.wantErr == "" && (err != nil || page.LastID != "sub_a"):
				t.Fatalf("page %+v, error %v", page, err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			case len(waits) != tc.waits:
				t.Fatalf("waited %d times, want %d", len(waits), tc.waits)
			case err != nil && strings.Contains(err.Error(), "secretvalue"):
				t.Fatalf("the key leaked into %q", err)
			}
			if tc.name == "rate limited twice, honouring Retry-After" && waits[0] != time.Second {
				t.Fatalf("Retry-After: 1 gave a wait of %v", waits[0])
			}
		})
	}
}

func TestSubscriptionsStopsWaitingWhenCancelled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rateLimited("30")(w) }))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	c := NewClient(Config{Key: "sk_test_x", Base: srv.URL, OnWait: func(time.Duration, string) { cancel() }})
	start := time.Now()
	if _, err := c.Subscriptions(ctx, SubscriptionQuery{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("the 30 s wait was not cut short")
	}
}

func TestBackoffDoublesWithJitterUpToACap(t *testing.T) {
	for attempt := 1; attempt <= 40; attempt++ {
		full := min(time.Second<<min(attempt-1, 16), maxWait)
		if got := backoff(time.Second, attempt); got < full/2 || got > full {
			t.Fatalf("attempt %d: wait %v, want between %v and %v", attempt, got, full/2, full)
		}
	}
}

func rateLimited(retryAfter string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		status(429, `{"error":{"type":"invalid_request_error","code":"rate_limit","message":"Too many requests"}}`)(w)
	}
}

func status(code int, body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.WriteHeader(code)
		fmt.Fprint(w, body)
	}
}

func TestSessionsAgainstStripeMock(t *testing.T) {
	c := NewClient(Config{Key: "sk_test_123", Base: stripemock.Start(t)})
	ctx := context.Background()
	for _, in := range []Checkout{
		{Price: "price_123", UserID: "00000000-0000-4000-8000-000000000001", Customer: "cus_123", SuccessURL: "https://app.example/?checkout=success", CancelURL: "https://app.example/?checkout=cancel"},
		{Price: "price_123", UserID: "00000000-0000-4000-8000-000000000001", CustomerEmail: "ada@example.com", SuccessURL: "https://app.example/ok", CancelURL: "https://app.example/no"},
	} {
		if url, err := c.CreateCheckout(ctx, in); err != nil || !strings.HasPrefix(url, "https://") {
			t.Fatalf("checkout %+v: %q %v", in, url, err)
		}
	}
	if url, err := c.CreatePortal(ctx, "cus_123", "https://app.example/"); err != nil || !strings.HasPrefix(url, "https://") {
		t.Fatalf("portal: %q %v", url, err)
	}
}

func TestSessionsSendExactlyTheseParameters(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		got = append(got, r.Method+" "+r.URL.Path+" "+unescape(r.PostForm.Encode()))
		fmt.Fprint(w, `{"id":"cs_1","url":"https://checkout.example/c/cs_1"}`)
	}))
	defer srv.Close()
	c := NewClient(Config{Key: "sk_test_x", Base: srv.URL})
	ctx := context.Background()
	const user = "00000000-0000-4000-8000-000000000001"
	c.CreateCheckout(ctx, Checkout{Price: "price_pro", UserID: user, Customer: "cus_1", CustomerEmail: "ignored@example.com", SuccessURL: "https://a/s", CancelURL: "https://a/c"})
	c.CreateCheckout(ctx, Checkout{Price: "price_pro", UserID: user, CustomerEmail: "ada@example.com", SuccessURL: "https://a/s", CancelURL: "https://a/c"})
	url, err := c.CreatePortal(ctx, "cus_1", "https://a/")
	if err != nil || url != "https://checkout.example/c/cs_1" {
		t.Fatalf("portal: %q %v", url, err)
	}
	want := []string{
		"POST /v1/checkout/sessions cancel_url=https://a/c&client_reference_id=" + user + "&customer=cus_1&line_items[0][price]=price_pro&line_items[0][quantity]=1&mode=subscription&subscription_data[metadata][user_id]=" + user + "&success_url=https://a/s",
		"POST /v1/checkout/sessions cancel_url=https://a/c&client_reference_id=" + user + "&customer_email=ada@example.com&line_items[0][price]=price_pro&line_items[0][quantity]=1&mode=subscription&subscription_data[metadata][user_id]=" + user + "&success_url=https://a/s",
		"POST /v1/billing_portal/sessions customer=cus_1&return_url=https://a/",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sent\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
