package ratelimit

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSlidingCount(t *testing.T) {
	start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		prev, curr int
		into       time.Duration
		want       int
	}{
		{prev: 0, curr: 7, into: 0, want: 7},
		{prev: 10, curr: 0, into: 0, want: 10},                // the whole previous window still overlaps
		{prev: 10, curr: 3, into: 15 * time.Second, want: 11}, // a quarter of it has slid out: 7.5 rounds to 8
		{prev: 10, curr: 3, into: 30 * time.Second, want: 8},
		{prev: 10, curr: 3, into: 59 * time.Second, want: 3},
	} {
		if got := slidingCount(tc.prev, tc.curr, start, start.Add(tc.into), time.Minute); got != tc.want {
			t.Errorf("prev %d, curr %d, %v in: %d, want %d", tc.prev, tc.curr, tc.into, got, tc.want)
		}
	}
}

func TestMemoryCounterSlides(t *testing.T) {
	c := newMemoryCounter(Limit{Name: "t", Requests: 4, Window: time.Minute})
	start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	takes := func(key string, at time.Time) (admitted int) {
		for {
			_, ok, err := c.take(key, at)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return admitted
			}
			admitted++
		}
	}
	if n := takes("a", start.Add(10*time.Second)); n != 4 {
		t.Fatalf("a fresh key admitted %d, want 4", n)
	}
	if n := takes("b", start.Add(20*time.Second)); n != 4 {
		t.Fatalf("another key shares a's count: %d admitted", n)
	}
	// Half into the next window half of a's four still count: two places are free.
	if n := takes("a", start.Add(90*time.Second)); n != 2 {
		t.Fatalf("half a window on, %d admitted, want 2", n)
	}
	// Two windows on, nothing of the past counts.
	if n := takes("a", start.Add(180*time.Second)); n != 4 {
		t.Fatalf("two windows on, %d admitted, want 4", n)
	}
}

// TestMemoryCounterAdmitsTheLimitUnderContention: many goroutines racing for one key never
// get more places than the limit between them.
func TestMemoryCounterAdmitsTheLimitUnderContention(t *testing.T) {
	const limit = 500
	c := newMemoryCounter(Limit{Name: "t", Requests: limit, Window: time.Hour})
	now := time.Now()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 100 {
				if _, ok, _ := c.take("k", now); ok {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if admitted.Load() != limit {
		t.Fatalf("%d admitted, want exactly %d", admitted.Load(), limit)
	}
}
