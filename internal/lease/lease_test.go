package lease_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/lease"
)

var errBusy = errors.New("busy")

// TestAHeldLeaseOutlivesItsHold: a lease held (Hold) is renewed while its holder waits
// far longer than the lease lasts unrenewed; released, another process takes it at once;
// a holder that stops renewing (a process that died) loses it once it has run out.
func TestAHeldLeaseOutlivesItsHold(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		const holdFor = 300 * time.Millisecond
		log := slog.New(slog.DiscardHandler)
		mine, other := lease.New(d, "job", holdFor, errBusy, time.Now, log), lease.New(d, "job", holdFor, errBusy, time.Now, log)
		held, release, err := mine.Hold(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(4 * holdFor) // a wait (a store's Retry-After) longer than the hold
		if err := other.Take(context.Background()); !errors.Is(err, errBusy) || held.Err() != nil {
			t.Fatalf("another process during a long wait: %v (the holder's context: %v), want busy", err, held.Err())
		}
		release()
		if err := other.Take(context.Background()); err != nil {
			t.Fatalf("after release: %v", err)
		}
		// other now holds it without renewing, as a process that died: it runs out.
		time.Sleep(holdFor + 100*time.Millisecond)
		if err := mine.Take(context.Background()); err != nil {
			t.Fatalf("after the other's lease ran out: %v", err)
		}
	})
}
