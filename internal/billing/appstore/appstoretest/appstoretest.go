// Package appstoretest puts Apple's faults between tollgate and the App Store stand-in
// (appstoredev), for tests of how tollgate rides them out: refused keys, throttling,
// failing status reads, broken paging, slowness. The stand-in itself stays as Apple is on a
// good day; this kit is built into tests only.
package appstoretest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
)

// historyPage is the stand-in's page size: a "repeat" page token names the second page.
const historyPage = 20

// API is the stand-in behind Apple's faults. Its Handler serves the stand-in through them;
// every other method is the stand-in's.
type API struct {
	*appstoredev.API

	mu       sync.Mutex
	requests []time.Time
	tokens   []string
	throttle []time.Time // the Retry-After of each 429 to answer next; zero: none given
	faults   faults
}

type faults struct {
	refuseKeys bool
	// subscriptions are the answers queued for a subscription's status reads, in order;
	// the last of a sticky list is answered for ever.
	subscriptions map[string][]Fault
	sticky        map[string]bool
	slow          time.Duration
	// pages: "repeat" answers every page after the first with the same paginationToken;
	// "cycle" leads back to the first page's; "no token" says hasMore with none, once.
	pages string
}

// Fault is an answer that is not a success: an HTTP status and Apple's errorCode.
type Fault struct {
	Status int
	Code   int64
}

// New is a stand-in signing with chain, for the app bundleID in environment, behind faults
// (none set).
func New(chain *appstoredev.Chain, bundleID, environment string) (*API, error) {
	s, err := appstoredev.NewAPI(chain, bundleID, environment)
	if err != nil {
		return nil, err
	}
	return &API{API: s, faults: faults{subscriptions: map[string][]Fault{}, sticky: map[string]bool{}}}, nil
}

// Handler serves the stand-in behind the faults set.
func (a *API) Handler() http.Handler {
	next := a.API.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.requests = append(a.requests, time.Now())
		a.tokens = append(a.tokens, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		var throttled *time.Time
		if len(a.throttle) > 0 {
			throttled = &a.throttle[0]
			a.throttle = a.throttle[1:]
		}
		refuseKeys := a.faults.refuseKeys
		a.mu.Unlock()
		switch {
		case refuseKeys:
			w.WriteHeader(http.StatusUnauthorized)
		case throttled != nil:
			if !throttled.IsZero() {
				w.Header().Set("Retry-After", strconv.FormatInt(throttled.UnixMilli(), 10))
			}
			writeJSON(w, http.StatusTooManyRequests, map[string]any{"errorCode": 4290000, "errorMessage": "Rate limit exceeded."})
		case strings.HasPrefix(r.URL.Path, "/inApps/v1/subscriptions/"):
			if f, ok := a.subscriptionFault(strings.TrimPrefix(r.URL.Path, "/inApps/v1/subscriptions/")); ok {
				writeJSON(w, f.Status, map[string]any{"errorCode": f.Code, "errorMessage": "A fault of the stand-in's."})
				return
			}
			next.ServeHTTP(w, r)
		case r.URL.Path == "/inApps/v1/notifications/history":
			a.servePage(next, w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// servePage serves a history page, broken as BreakPaging said when more follow it.
func (a *API) servePage(next http.Handler, w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r)
	var page map[string]any
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &page) != nil || page["hasMore"] != true {
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		return
	}
	from, _ := strconv.Atoi(r.URL.Query().Get("paginationToken"))
	a.mu.Lock()
	switch a.faults.pages {
	case "repeat":
		page["paginationToken"] = strconv.Itoa(historyPage)
	case "cycle":
		if from > 0 {
			page["paginationToken"] = "0"
		}
	case "no token":
		delete(page, "paginationToken")
		a.faults.pages = ""
	}
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, page)
}

// RefuseKeys makes every request answer 401 (true), as Production does until an app's
// first release, or serve again (false).
func (a *API) RefuseKeys(refuse bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.faults.refuseKeys = refuse
}

// Throttle makes the next request answer 429 with Retry-After retryAt (zero: none).
func (a *API) Throttle(retryAt time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.throttle = append(a.throttle, retryAt)
}

// FailSubscription queues answers for the next status reads of one original transaction;
// with always, the last of them is answered for ever after.
func (a *API) FailSubscription(id string, always bool, answers ...Fault) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.faults.subscriptions[id] = append(a.faults.subscriptions[id], answers...)
	a.faults.sticky[id] = always
}

// BreakPaging makes the history's pages misbehave: "repeat", "cycle", "no token" or ""
// (pages as Apple pages them).
func (a *API) BreakPaging(how string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.faults.pages = how
}

// SlowStatuses delays every status read by d (0: none), as a pass over a busy app goes.
func (a *API) SlowStatuses(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.faults.slow = d
}

// Requests are when each request arrived, and the stand-in's refusals of their tokens.
func (a *API) Requests() ([]time.Time, []string) {
	refusals := a.API.Refusals()
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.requests), refusals
}

// Tokens are the bearer tokens of the requests, in order.
func (a *API) Tokens() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.tokens)
}

// subscriptionFault is the fault queued for a status read of id, after the slowness set.
func (a *API) subscriptionFault(id string) (Fault, bool) {
	a.mu.Lock()
	slow := a.faults.slow
	a.mu.Unlock()
	time.Sleep(slow)
	a.mu.Lock()
	defer a.mu.Unlock()
	queue := a.faults.subscriptions[id]
	if len(queue) == 0 {
		return Fault{}, false
	}
	f := queue[0]
	if len(queue) > 1 || !a.faults.sticky[id] {
		a.faults.subscriptions[id] = queue[1:]
	}
	return f, true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}
