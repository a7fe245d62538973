package console

import (
	"context"
	"sync"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbq"
)

// The standing is worked out from every canonical subscription. With a few thousand that
// takes milliseconds and every page works it out anew; with a million it takes seconds.
// So once working it out has taken longer than slowStanding, the pages show the last one
// worked out while it is younger than standingMaxAge, saying when it was worked out, and
// RunSnapshots works it out again every standingRefresh so that they always find one.
const (
	slowStanding    = 100 * time.Millisecond
	standingMaxAge  = time.Minute
	standingRefresh = standingMaxAge / 2
)

// standingNow is the standing and the people subscribed at At. Kept says it was worked
// out before the request that shows it.
type standingNow struct {
	At     time.Time
	Kept   bool
	Rows   standing
	People people
}

// keptStanding is the last standing worked out and how long that took.
type keptStanding struct {
	// working lets one request at a time work the standing out: those that wait for it
	// then find it kept, rather than each reading every subscription again.
	working sync.Mutex
	mu      sync.Mutex
	last    standingNow
	took    time.Duration
	// slowAfter is slowStanding; tests lower it.
	slowAfter time.Duration
}

// fresh is the kept standing, when working it out is slow and it is younger than
// standingMaxAge at now.
func (k *keptStanding) fresh(now time.Time) (standingNow, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.took < k.slowAfter || k.last.At.IsZero() || now.Sub(k.last.At) >= standingMaxAge {
		return standingNow{}, false
	}
	s := k.last
	s.Kept = true
	return s, true
}

func (k *keptStanding) keep(s standingNow, took time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.last, k.took = s, took
}

// slow says whether working the standing out took longer than slowStanding last time.
func (k *keptStanding) slow() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return !k.last.At.IsZero() && k.took >= k.slowAfter
}

// currentStanding is the standing for a page: the one kept, when working it out is slow
// and it is fresh, else worked out now.
func (c *Console) currentStanding(ctx context.Context) (standingNow, error) {
	if s, ok := c.kept.fresh(c.now()); ok {
		return s, nil
	}
	if !c.kept.slow() {
		return c.workOutStanding(ctx)
	}
	c.kept.working.Lock()
	defer c.kept.working.Unlock()
	if s, ok := c.kept.fresh(c.now()); ok {
		return s, nil // worked out while this request waited
	}
	return c.workOutStanding(ctx)
}

// workOutStanding reads every canonical subscription, works out the standing and the
// people subscribed now, and keeps them.
func (c *Console) workOutStanding(ctx context.Context) (standingNow, error) {
	started := time.Now()
	subs, err := dbq.New(c.opts.DB).ConsoleSubscriptions(ctx)
	if err != nil {
		return standingNow{}, err
	}
	now := c.now()
	s := standingNow{At: now, Rows: standingAt(subs, now), People: people{
		ByProvider:     countPeople(subs, now, func(s dbq.ConsoleSubscriptionsRow) string { return s.Provider }),
		ByPlan:         countPeople(subs, now, func(s dbq.ConsoleSubscriptionsRow) string { return s.PlanKey }),
		ByPlanProvider: countPeople(subs, now, func(s dbq.ConsoleSubscriptionsRow) planProvider { return planProvider{s.PlanKey, s.Provider} }),
		Total:          countPeople(subs, now, func(dbq.ConsoleSubscriptionsRow) struct{} { return struct{}{} })[struct{}{}],
	}}
	c.kept.keep(s, time.Since(started))
	return s, nil
}
