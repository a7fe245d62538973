package console

import (
	"context"
	"sync"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbq"
)

// The counts the overview and the plans page show (the standing, from every canonical
// subscription, and the charts' daily counts of the last 90 days) take milliseconds with a
// few thousand subscriptions, and every view works them out anew; with a million, and a
// million events in 90 days, they take seconds. So once working them out has taken longer
// than slowStanding over at least bigStanding subscriptions, the pages show the last ones
// worked out while they are younger than standingMaxAge, saying when they were worked
// out, and RunSnapshots works them out again every standingRefresh so that the pages
// always find them. Under bigStanding a slow working-out is the machine's passing load (a
// server starting, a busy core), not the counts' size: the next view works them out anew
// and shows a change at once.
const (
	slowStanding    = 100 * time.Millisecond
	bigStanding     = 10_000
	standingMaxAge  = 2 * time.Minute
	standingRefresh = time.Minute
)

// standingNow is the standing, the people subscribed and the daily counts at At. Kept
// says they were worked out before the request that shows them.
type standingNow struct {
	At     time.Time
	Kept   bool
	Rows   standing
	People people
	Daily  map[string]dayCounts // by the name of its query in days.sql, since the first of the charts' days
}

// keptStanding is the last standing worked out and how long that took.
type keptStanding struct {
	// working lets one request at a time work the standing out: those that wait for it
	// then find it kept, rather than each reading every subscription again.
	working sync.Mutex
	mu      sync.Mutex
	last    standingNow
	took    time.Duration
	read    int // the subscriptions the last working-out read
	// slowAfter is slowStanding and bigFrom bigStanding; tests lower them.
	slowAfter time.Duration
	bigFrom   int
}

// fresh is the kept standing, when working it out is slow and it is younger than
// standingMaxAge at now.
func (k *keptStanding) fresh(now time.Time) (standingNow, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.slowLocked() || now.Sub(k.last.At) >= standingMaxAge {
		return standingNow{}, false
	}
	s := k.last
	s.Kept = true
	return s, true
}

func (k *keptStanding) keep(s standingNow, took time.Duration, read int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.last, k.took, k.read = s, took, read
}

// slow says whether working the standing out took longer than slowStanding last time,
// over at least bigStanding subscriptions.
func (k *keptStanding) slow() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.slowLocked()
}

func (k *keptStanding) slowLocked() bool {
	return !k.last.At.IsZero() && k.took >= k.slowAfter && k.read >= k.bigFrom
}

// currentStanding is the standing for a page: the one kept, when working it out is slow
// and it is fresh, else worked out now, by one view at a time.
func (c *Console) currentStanding(ctx context.Context) (standingNow, error) {
	if s, ok := c.kept.fresh(c.now()); ok {
		return s, nil
	}
	c.kept.working.Lock()
	defer c.kept.working.Unlock()
	if s, ok := c.kept.fresh(c.now()); ok {
		return s, nil // worked out while this request waited
	}
	return c.workOutStanding(ctx)
}

// workOutStanding reads every canonical subscription and the charts' days, works out the
// standing, the people subscribed and the daily counts now, and keeps them.
func (c *Console) workOutStanding(ctx context.Context) (standingNow, error) {
	started := time.Now()
	subs, err := dbq.New(c.opts.DB).ConsoleSubscriptions(ctx)
	if err != nil {
		return standingNow{}, err
	}
	now := c.now()
	since, _ := time.Parse(time.DateOnly, lastDays(now, chartDays)[0])
	daily := map[string]dayCounts{}
	for name := range c.daily {
		if daily[name], err = c.countByDay(ctx, name, since); err != nil {
			return standingNow{}, err
		}
	}
	s := standingNow{At: now, Daily: daily, Rows: standingAt(subs, now), People: people{
		ByProvider:     countPeople(subs, now, func(s dbq.ConsoleSubscriptionsRow) string { return s.Provider }),
		ByPlan:         countPeople(subs, now, func(s dbq.ConsoleSubscriptionsRow) string { return s.PlanKey }),
		ByPlanProvider: countPeople(subs, now, func(s dbq.ConsoleSubscriptionsRow) planProvider { return planProvider{s.PlanKey, s.Provider} }),
		Total:          countPeople(subs, now, func(dbq.ConsoleSubscriptionsRow) struct{} { return struct{}{} })[struct{}{}],
	}}
	c.kept.keep(s, time.Since(started), len(subs))
	return s, nil
}
