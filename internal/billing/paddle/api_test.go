package paddle_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/paddle"
)

// A read Paddle rate-limits (429) or fails (5xx) is tried again; a refused key ends it at
// once, as billing.ErrAPIRefused, which ends a reconcile pass.
func TestSubscriptionsReadsAreTriedAgain(t *testing.T) {
	var calls atomic.Int32
	answers := []int{http.StatusTooManyRequests, http.StatusBadGateway, http.StatusOK}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(calls.Add(1)) - 1
		if r.Header.Get("Authorization") == "Bearer pdl_sdbx_apikey_refused" {
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"error":{"code":"forbidden","detail":"pdl_sdbx_apikey_refused is not allowed"}}`))
			return
		}
		if status := answers[min(n, len(answers)-1)]; status != http.StatusOK {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(status)
			return
		}
		w.Write([]byte(`{"data":[{"id":"sub_1"}],"meta":{"pagination":{"has_more":false}}}`))
	}))
	defer srv.Close()
	api, err := paddle.NewAPI(paddle.APIConfig{Key: "pdl_sdbx_apikey_test", Base: srv.URL, FirstWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	page, err := api.Subscriptions(context.Background(), "", "")
	if err != nil || len(page.Subscriptions) != 1 || page.Next != "sub_1" || calls.Load() != 3 {
		t.Fatalf("after a 429 and a 502: %d subscriptions, next %q, %d calls, %v", len(page.Subscriptions), page.Next, calls.Load(), err)
	}
	calls.Store(0)
	refused, _ := paddle.NewAPI(paddle.APIConfig{Key: "pdl_sdbx_apikey_refused", Base: srv.URL, FirstWait: time.Millisecond})
	_, err = refused.Subscriptions(context.Background(), "", "")
	if !errors.Is(err, billing.ErrAPIRefused) || calls.Load() != 1 || billing.StatusOf(err) != http.StatusForbidden {
		t.Fatalf("a refused key: %v after %d calls", err, calls.Load())
	}
	if msg := err.Error(); msg != "Paddle's API refused PADDLE_API_KEY (403): forbidden" {
		t.Fatalf("the refusal says %q: the key, or Paddle's detail, must not show", msg)
	}
}
