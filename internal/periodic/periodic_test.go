package periodic_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/periodic"
)

// TestRun: the job runs at once, again after the wait it asked for, at once when woken,
// and not after ctx ends (Run returns).
func TestRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	wake := make(chan struct{})
	var runs atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		periodic.Run(ctx, wake, func(context.Context) time.Duration {
			if runs.Add(1) == 2 {
				return 10 * time.Millisecond // the second run asks for a short wait
			}
			return time.Hour
		})
	}()
	waitFor(t, func() bool { return runs.Load() == 1 }) // at once
	wake <- struct{}{}                                  // cuts the hour short
	waitFor(t, func() bool { return runs.Load() == 3 }) // the second, then the third 10 ms later
	cancel()
	<-done
	if n := runs.Load(); n != 3 {
		t.Fatalf("%d runs, want 3", n)
	}
}

// TestRunReturnsWhenItsContextEndsDuringARun: a run that ends with ctx is the last.
func TestRunReturnsWhenItsContextEndsDuringARun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var runs int
	periodic.Run(ctx, nil, func(context.Context) time.Duration { runs++; cancel(); return 0 })
	if runs != 1 {
		t.Fatalf("%d runs after the context ended in the first", runs)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not within 5 s")
		}
	}
}
