package reader

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// answerCache keeps users' billing answers (their position and this period's usage) in
// memory, so that /api/v1/me, the service API and the framework's reads do not go to the
// database each time. An answer is dropped:
//   - when this instance writes what it is made of (webhooks, replays, backfills, usage);
//   - when any instance or command does: triggers notify tollgate_billing, and
//     ListenForChanges forgets what they name (on Postgres within milliseconds of the
//     commit; on SQLite within db.PollInterval, 200 ms);
//   - when it could change with time alone: at the next period end among the user's
//     subscriptions or the end of the usage period, whichever comes first;
//   - after maxAge in any case, the bound on what a missed notification can cost.
type answerCache struct {
	maxAge time.Duration
	mu     sync.Mutex
	// generation counts forgetting; an answer read while it moved may predate what was
	// forgotten, and is not kept.
	generation uint64
	answers    map[string]cachedAnswer
}

type cachedAnswer struct {
	position billing.Entitlements
	used     map[string]int64
	view     []byte // billing.EncodeView of the answer's view; shared, never changed
	until    time.Time
}

// maxCachedAnswers bounds the cache; when full it starts afresh, which costs only reads.
const maxCachedAnswers = 100_000

func newAnswerCache(maxAge time.Duration) *answerCache {
	if maxAge <= 0 {
		return nil
	}
	return &answerCache{maxAge: maxAge, answers: map[string]cachedAnswer{}}
}

// get is userID's cached answer at now, if there is one.
func (c *answerCache) get(userID string, now time.Time) (cachedAnswer, bool) {
	if c == nil {
		return cachedAnswer{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.answers[userID]
	if ok && !now.Before(a.until) {
		delete(c.answers, userID)
		ok = false
	}
	return a, ok
}

// begin is the generation a read of the database starts at, for keep.
func (c *answerCache) begin() uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.generation
}

// keep stores an answer read at now, unless anything was forgotten since its read began.
func (c *answerCache) keep(generation uint64, a cachedAnswer, now time.Time) {
	if c == nil {
		return
	}
	a.until = now.Add(c.maxAge)
	if end := a.position.ChangesAt(); !end.IsZero() && end.Before(a.until) {
		a.until = end // the answer may change when a period ends, event or not
	}
	if end := a.position.UsagePeriodEnd(); end.Before(a.until) {
		a.until = end
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.generation != generation {
		return
	}
	if len(c.answers) >= maxCachedAnswers {
		clear(c.answers)
	}
	c.answers[a.position.UserID] = a
}

// forget drops the answers of users ("" is no user); "*" drops everyone's.
func (c *answerCache) forget(users ...string) {
	if c == nil || !slices.ContainsFunc(users, func(u string) bool { return u != "" }) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	for _, u := range users {
		if u == "*" {
			clear(c.answers)
			return
		}
		delete(c.answers, u)
	}
}

// clone copies what a caller could change, so a cached answer stays as it was read.
func (a cachedAnswer) clone() cachedAnswer {
	a.position.Subscriptions = slices.Clone(a.position.Subscriptions)
	a.position.Effective = maps.Clone(a.position.Effective)
	a.used = maps.Clone(a.used)
	return a
}
