package appstoredev

import (
	"slices"
	"strconv"
	"time"
)

// Faults of Apple's, for tests of how tollgate rides them out.

// faults are the faults set, under the API's lock.
type faults struct {
	refuseKeys bool
	// subscriptions are the answers queued for a subscription's status reads, in order;
	// the last of a sticky list is answered for ever.
	subscriptions map[string][]Fault
	sticky        map[string]bool
	// slow delays every status read.
	slow time.Duration
	// pages: "repeat" answers every page after the first with the same paginationToken;
	// "cycle" leads back to the first page's; "no token" says hasMore with none, once.
	pages string
}

// Fault is an answer that is not a success: an HTTP status and Apple's errorCode.
type Fault struct {
	Status int
	Code   int64
}

// RefuseKeys makes every request answer 401 (true), as Production does until an app's
// first release, or serve again (false).
func (a *API) RefuseKeys(refuse bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.faults.refuseKeys = refuse
}

// FailSubscription queues answers for the next status reads of one original transaction;
// with always, the last of them is answered for ever after.
func (a *API) FailSubscription(id string, always bool, answers ...Fault) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.faults.subscriptions[id] = append(a.faults.subscriptions[id], answers...)
	if a.faults.sticky == nil {
		a.faults.sticky = map[string]bool{}
	}
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

// Tokens are the bearer tokens of the requests, in order.
func (a *API) Tokens() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.tokens)
}

// subscriptionFault is the fault queued for a status read of id, if any.
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

// pageFault breaks a page that has more after it as BreakPaging said; from is the index
// of the page's first item.
func (a *API) pageFault(page map[string]any, from int) {
	a.mu.Lock()
	defer a.mu.Unlock()
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
}
