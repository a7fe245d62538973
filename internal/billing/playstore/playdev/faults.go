package playdev

import (
	"net/http"
	"strconv"
)

// Faults of Google's, for tests of how tollgate rides them out.

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

// FailNext queues answers for the next calls of call (CallSubscription, CallVoided).
func (g *Google) FailNext(call string, answers ...Failure) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failNext[call] = append(g.failNext[call], answers...)
}

// BreakVoidedPaging makes every page of the voided list after the first name the same
// next page ("repeat"), or pages as Google does ("").
func (g *Google) BreakVoidedPaging(how string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.voidedPaging = how
}

// failed answers the failure queued for call, if any, and says whether it did.
func (g *Google) failed(w http.ResponseWriter, call string) bool {
	g.mu.Lock()
	queue := g.failNext[call]
	if len(queue) == 0 {
		g.mu.Unlock()
		return false
	}
	f := queue[0]
	g.failNext[call] = queue[1:]
	g.mu.Unlock()
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	apiError(w, f.Status, http.StatusText(f.Status))
	return true
}

// voidedToken is the page token of the voided list's page that begins at index to.
func (g *Google) voidedToken(to int) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.voidedPaging == "repeat" {
		return "2"
	}
	return strconv.Itoa(to)
}

// SetDown makes the API answer 503 (true) or serve again.
func (g *Google) SetDown(down bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.down = down
}

// HoldKeys makes the push keys' endpoint hang (true), as an outage that answers nothing
// does, until released (false) or the request gives up.
func (g *Google) HoldKeys(hold bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case hold && g.keysHeld == nil:
		g.keysHeld = make(chan struct{})
	case !hold && g.keysHeld != nil:
		close(g.keysHeld)
		g.keysHeld = nil
	}
}

// SetKeysDown makes the push keys' endpoint answer 503 (true) or serve again.
func (g *Google) SetKeysDown(down bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.keysDown = down
}

// KeyRequests is how many times the push keys were asked for.
func (g *Google) KeyRequests() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.keyRequests
}
