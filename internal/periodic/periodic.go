// Package periodic runs a background job again and again until its context ends: the one
// loop behind every job serve runs on a schedule (grants' ends, reconcile passes, store
// histories, retention).
package periodic

import (
	"context"
	"time"
)

// Run calls run at once and then again each time the wait it answered has passed, or
// when wake receives (a nil wake never does), until ctx ends. A wait of zero or less runs
// it again at once. Run returns when ctx ends, never during a run.
func Run(ctx context.Context, wake <-chan struct{}, run func(ctx context.Context) (wait time.Duration)) {
	for ctx.Err() == nil {
		wait := run(ctx)
		if ctx.Err() != nil {
			return
		}
		if wait <= 0 {
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		case <-wake:
			timer.Stop()
		}
	}
}
