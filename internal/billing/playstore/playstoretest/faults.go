package playstoretest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Faults of Google's, put between tollgate and the stand-in: the stand-in itself stays as
// Google is on a good day.

// The calls a Failure can be queued for.
const (
	CallSubscription = "subscriptionsv2"
	CallVoided       = "voidedpurchases"
)

// Failure is an answer that is not a success: an HTTP status and its Retry-After ("" for
// none).
type Failure struct {
	Status     int
	RetryAfter string
}

// faults are the faults set, and what they counted.
type faults struct {
	mu           sync.Mutex
	failNext     map[string][]Failure
	voidedPaging string
	down         bool
	keysHeld     chan struct{} // while not nil, every request for the push keys waits for it
	keysDown     bool
	keyRequests  int
}

// FailNext queues answers for the next calls of call (CallSubscription, CallVoided).
func (g *Google) FailNext(call string, answers ...Failure) {
	g.faults.mu.Lock()
	defer g.faults.mu.Unlock()
	g.faults.failNext[call] = append(g.faults.failNext[call], answers...)
}

// BreakVoidedPaging makes every page of the voided list after the first name the same
// next page ("repeat"), or pages as Google does ("").
func (g *Google) BreakVoidedPaging(how string) {
	g.faults.mu.Lock()
	defer g.faults.mu.Unlock()
	g.faults.voidedPaging = how
}

// SetDown makes the API answer 503 (true) or serve again.
func (g *Google) SetDown(down bool) {
	g.faults.mu.Lock()
	defer g.faults.mu.Unlock()
	g.faults.down = down
}

// HoldKeys makes the push keys' endpoint hang (true), as an outage that answers nothing
// does, until released (false) or the request gives up.
func (g *Google) HoldKeys(hold bool) {
	g.faults.mu.Lock()
	defer g.faults.mu.Unlock()
	switch {
	case hold && g.faults.keysHeld == nil:
		g.faults.keysHeld = make(chan struct{})
	case !hold && g.faults.keysHeld != nil:
		close(g.faults.keysHeld)
		g.faults.keysHeld = nil
	}
}

// SetKeysDown makes the push keys' endpoint answer 503 (true) or serve again.
func (g *Google) SetKeysDown(down bool) {
	g.faults.mu.Lock()
	defer g.faults.mu.Unlock()
	g.faults.keysDown = down
}

// KeyRequests is how many times the push keys were asked for.
func (g *Google) KeyRequests() int {
	g.faults.mu.Lock()
	defer g.faults.mu.Unlock()
	return g.faults.keyRequests
}

// behindFaults serves next behind the faults set.
func (g *Google) behindFaults(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch path := r.URL.Path; {
		case path == "/certs":
			g.serveKeys(next, w, r)
		case strings.HasPrefix(path, "/androidpublisher/"):
			if g.fail(w, r) {
				return
			}
			if strings.HasSuffix(path, "/voidedpurchases") {
				g.serveVoided(next, w, r)
				return
			}
			next.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// serveKeys counts a request for the push keys, holds it or fails it as set.
func (g *Google) serveKeys(next http.Handler, w http.ResponseWriter, r *http.Request) {
	g.faults.mu.Lock()
	g.faults.keyRequests++
	held, down := g.faults.keysHeld, g.faults.keysDown
	g.faults.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-r.Context().Done():
			return
		}
	}
	if down {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	next.ServeHTTP(w, r)
}

// fail answers an API call as Google does when it is down, or the failure queued for its
// call, and says whether it did.
func (g *Google) fail(w http.ResponseWriter, r *http.Request) bool {
	call := ""
	switch {
	case strings.Contains(r.URL.Path, "/subscriptionsv2/") && r.Method == http.MethodGet:
		call = CallSubscription
	case strings.HasSuffix(r.URL.Path, "/voidedpurchases"):
		call = CallVoided
	}
	g.faults.mu.Lock()
	down := g.faults.down
	var f *Failure
	if queue := g.faults.failNext[call]; call != "" && len(queue) > 0 {
		f, g.faults.failNext[call] = &queue[0], queue[1:]
	}
	g.faults.mu.Unlock()
	switch {
	case f != nil:
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		apiError(w, f.Status, http.StatusText(f.Status))
	case down:
		apiError(w, http.StatusServiceUnavailable, "backendError")
	default:
		return false
	}
	return true
}

// serveVoided serves a page of the voided list, its next page token broken as set.
func (g *Google) serveVoided(next http.Handler, w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r)
	g.faults.mu.Lock()
	repeat := g.faults.voidedPaging == "repeat"
	g.faults.mu.Unlock()
	var page map[string]any
	if !repeat || rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &page) != nil || page["tokenPagination"] == nil {
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		return
	}
	page["tokenPagination"] = map[string]any{"nextPageToken": "2"}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(page)
}

// apiError answers as Google's APIs do.
func apiError(w http.ResponseWriter, status int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": status, "message": reason,
		"errors": []map[string]any{{"reason": reason, "message": reason}}}})
}
