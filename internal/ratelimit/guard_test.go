package ratelimit

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// keyHeader keys a rule on a request header, absent meaning "not counted".
func keyHeader(name string) func(*http.Request) (string, bool) {
	return func(r *http.Request) (string, bool) {
		v := r.Header.Get(name)
		return v, v != ""
	}
}

func newThrottles(t *testing.T) *Throttles {
	t.Helper()
	th, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	return th
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })

func send(h http.Handler, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func rateHeaders(rec *httptest.ResponseRecorder) (limit, remaining string) {
	return rec.Header().Get("RateLimit-Limit"), rec.Header().Get("RateLimit-Remaining")
}

// TestGuardWritesTheTighterLimitOnce: with two rules the headers are those of the rule with
// fewer requests left, whichever comes first.
func TestGuardWritesTheTighterLimitOnce(t *testing.T) {
	th := newThrottles(t)
	h := th.Guard(nil,
		Rule{Limit: Limit{Name: "wide", Requests: 5, Window: time.Minute}, Key: keyHeader("A")},
		Rule{Limit: Limit{Name: "narrow", Requests: 3, Window: time.Minute}, Key: keyHeader("B")})(okHandler)
	for i, want := range [][2]string{{"3", "2"}, {"3", "1"}, {"3", "0"}} {
		rec := send(h, "A", "a", "B", "b")
		if limit, left := rateHeaders(rec); rec.Code != http.StatusOK || limit != want[0] || left != want[1] {
			t.Fatalf("request %d: %d, RateLimit-Limit %q, Remaining %q; want 200, %s, %s", i+1, rec.Code, limit, left, want[0], want[1])
		}
		if n := len(rec.Header().Values("RateLimit-Limit")); n != 1 {
			t.Fatalf("RateLimit-Limit written %d times", n)
		}
	}
	// Another B: the wide rule, with two left, is now the tighter one.
	if limit, left := rateHeaders(send(h, "A", "a", "B", "other")); limit != "5" || left != "1" {
		t.Fatalf("with another B: RateLimit-Limit %q, Remaining %q; want 5, 1", limit, left)
	}
}

// TestGuardRefusal: a request refused by the second rule has been counted by the first (as
// it reached it), answers 429 with the refusing rule's headers and Retry-After, and is
// counted in the metric; one its rules do not key passes uncounted and without headers.
func TestGuardRefusal(t *testing.T) {
	th := newThrottles(t)
	narrow := Limit{Name: "narrow", Requests: 1, Window: time.Minute}
	h := th.Guard(nil,
		Rule{Limit: Limit{Name: "wide", Requests: 3, Window: time.Minute}, Key: keyHeader("A")},
		Rule{Limit: narrow, Key: keyHeader("B")})(okHandler)
	if rec := send(h, "A", "a", "B", "b"); rec.Code != http.StatusOK {
		t.Fatalf("first request: %d", rec.Code)
	}
	rec := send(h, "A", "a", "B", "b")
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("second request: %d, want 429", rec.Code)
	}
	limit, left := rateHeaders(rec)
	reset, errReset := strconv.ParseInt(rec.Header().Get("RateLimit-Reset"), 10, 64)
	retry, errRetry := strconv.ParseInt(rec.Header().Get("Retry-After"), 10, 64)
	if limit != "1" || left != "0" || errReset != nil || errRetry != nil || reset < 0 || reset > 60 || retry != max(1, reset) {
		t.Fatalf("429 headers: %v", rec.Header())
	}
	if got := testutil.ToFloat64(th.hits.WithLabelValues(narrow.Name)); got != 1 {
		t.Fatalf("hits of %s: %v, want 1", narrow.Name, got)
	}
	// A's count holds both requests: one place is left, then none.
	if _, left := rateHeaders(send(h, "A", "a")); left != "0" {
		t.Fatalf("A after a refusal by B: remaining %q, want 0", left)
	}
	if code := send(h, "A", "a").Code; code != http.StatusTooManyRequests {
		t.Fatalf("A's fourth request: %d, want 429", code)
	}
	// Keyed by neither rule: passes, with no RateLimit header.
	for range 5 {
		rec := send(h)
		if limit, _ := rateHeaders(rec); rec.Code != http.StatusOK || limit != "" {
			t.Fatalf("an unkeyed request: %d, RateLimit-Limit %q", rec.Code, limit)
		}
	}
}

func TestGuardCallsOnLimit(t *testing.T) {
	th := newThrottles(t)
	h := th.By(Limit{Name: "forms", Requests: 1, Window: time.Minute}, keyHeader("A"), func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})(okHandler)
	send(h, "A", "a")
	if rec := send(h, "A", "a"); rec.Code != http.StatusTeapot || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("refused: %d %v, want onLimit's 418 with Retry-After", rec.Code, rec.Header())
	}
}

// failingStore is a shared counter store that cannot be reached and does not fall back.
type failingStore struct{}

var errUnreachable = errors.New("unreachable")

func (failingStore) Config(int, time.Duration)                          {}
func (failingStore) Increment(string, time.Time) error                  { return errUnreachable }
func (failingStore) IncrementBy(string, time.Time, int) error           { return errUnreachable }
func (failingStore) Get(string, time.Time, time.Time) (int, int, error) { return 0, 0, errUnreachable }

// TestGuardFailingCounter: a counter that fails answers 503 and never reaches the handler.
func TestGuardFailingCounter(t *testing.T) {
	th := newThrottles(t)
	limit := Limit{Name: "t", Requests: 10, Window: time.Minute}
	reached := false
	failing := check{Rule: Rule{Limit: limit, Key: keyHeader("A")}, counter: &sharedCounter{limit: limit, store: failingStore{}},
		limit: "10", hits: th.hits.WithLabelValues(limit.Name)}
	h := th.pass([]check{failing}, nil)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	if rec := send(h, "A", "a"); rec.Code != http.StatusServiceUnavailable || reached || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("a failing counter: %d, handler reached %v", rec.Code, reached)
	}
}
