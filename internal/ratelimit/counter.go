package ratelimit

import (
	"hash/maphash"
	"math"
	"sync"
	"time"

	"github.com/go-chi/httprate"
)

// counter holds one limit's counts. take counts a request for key at now unless that would
// pass the limit. used is the sliding count the request saw before it was counted, so a
// refused request leaves limit−used at zero or below.
//
// The count is a sliding window over two fixed windows, as httprate and httprate-redis keep
// it: the previous window's count weighted by how much of it still overlaps, plus the
// current window's.
type counter interface {
	take(key string, now time.Time) (used int, admitted bool, err error)
}

// slidingCount is the count a request at now sees: curr of the window starting at start,
// plus prev weighted by the share of the previous window still inside the last length.
func slidingCount(prev, curr int, start, now time.Time, length time.Duration) int {
	left := float64(length - now.Sub(start))
	return int(math.Round(float64(prev)*left/float64(length))) + curr
}

// shards spreads one limit's keys over locks, so that concurrent requests of different
// clients rarely wait on each other.
const shards = 16

// memoryCounter keeps counts in this process. It checks and counts under one lock per
// shard, so no two requests can both take the last place.
type memoryCounter struct {
	limit  Limit
	seed   maphash.Seed
	shards [shards]memoryShard
}

type memoryShard struct {
	mu         sync.Mutex
	start      time.Time      // the current window's start
	curr, prev map[uint64]int // by the key's hash: a long key (a token) is never kept
}

func newMemoryCounter(limit Limit) *memoryCounter {
	c := &memoryCounter{limit: limit, seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].curr, c.shards[i].prev = map[uint64]int{}, map[uint64]int{}
	}
	return c
}

func (c *memoryCounter) take(key string, now time.Time) (int, bool, error) {
	// Keys that share a 64-bit hash share a count. With a seed of this process's own, no
	// client can aim its key at another's.
	h := maphash.String(c.seed, key)
	s := &c.shards[h%shards]
	start := now.Truncate(c.limit.Window)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roll(start, c.limit.Window)
	used := slidingCount(s.prev[h], s.curr[h], start, now, c.limit.Window)
	if used+1 > c.limit.Requests {
		return used, false, nil
	}
	s.curr[h]++
	return used, true, nil
}

// roll moves the shard's windows on to the one starting at start, forgetting what is older
// than the window before it.
func (s *memoryShard) roll(start time.Time, length time.Duration) {
	switch {
	case s.start.Equal(start):
		return
	case s.start.Equal(start.Add(-length)):
		clear(s.prev)
		s.prev, s.curr = s.curr, s.prev
	default:
		clear(s.prev)
		clear(s.curr)
	}
	s.start = start
}

// sharedCounter keeps counts in Redis through httprate-redis, which counts in this process
// instead while Redis does not answer. Its check and its count are two commands, so
// instances racing for the last places may admit a few requests more than the limit.
type sharedCounter struct {
	limit Limit
	store httprate.LimitCounter
}

func (c *sharedCounter) take(key string, now time.Time) (int, bool, error) {
	start := now.Truncate(c.limit.Window)
	curr, prev, err := c.store.Get(key, start, start.Add(-c.limit.Window))
	if err != nil {
		return 0, false, err
	}
	used := slidingCount(prev, curr, start, now, c.limit.Window)
	if used+1 > c.limit.Requests {
		return used, false, nil
	}
	return used, true, c.store.IncrementBy(key, start, 1)
}
