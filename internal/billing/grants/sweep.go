package grants

import (
	"context"
	"database/sql"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/grant"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/periodic"
)

// SweepEvery is the longest the sweep waits between looks: a grant another instance made,
// whose end this one does not know of, is ended within it even if that instance stopped.
const SweepEvery = 30 * time.Second

// afterFailure is the least the sweep waits after a look failed, so that a database
// outage is not asked again at once.
const afterFailure = 5 * time.Second

// EndDue records the end of every live grant whose end has passed, each at its end, and
// says how many it recorded. Another instance may record the same ends at the same time:
// each end is one event id, applied once.
func (g *Grants) EndDue(ctx context.Context) (int, error) {
	ended := 0
	for {
		states, err := dbq.New(g.db).GrantsDue(ctx, sql.NullTime{Time: g.now(), Valid: true})
		if err != nil {
			return ended, err
		}
		for _, state := range states {
			due, err := billing.StoredState[billing.Grant](billing.Stored{State: state})
			if err != nil {
				return ended, err
			}
			if _, err := g.record(ctx, grant.EventEnded, due, due.End()); err != nil {
				return ended, err
			}
			ended++
		}
		if len(states) < 100 { // GrantsDue's page
			return ended, nil
		}
	}
}

// Run records grants' ends until ctx ends: at the next end it knows of, at most
// SweepEvery apart, and at once when this instance adds a grant.
func (g *Grants) Run(ctx context.Context) {
	periodic.Run(ctx, g.added, func(ctx context.Context) time.Duration {
		if _, err := g.EndDue(ctx); err != nil {
			if ctx.Err() == nil {
				g.log.WarnContext(ctx, "grants: recording ends failed; trying again shortly", "error", err)
			}
			return afterFailure
		}
		if next, err := g.nextEnd(ctx); err == nil && !next.IsZero() {
			return min(SweepEvery, max(next.Sub(g.now()), 0))
		}
		return SweepEvery
	})
}

// nextEnd is when the next live grant ends (zero: none is live).
func (g *Grants) nextEnd(ctx context.Context) (time.Time, error) {
	ends, err := dbq.New(g.db).NextGrantEnd(ctx)
	if err != nil || len(ends) == 0 || !ends[0].Valid {
		return time.Time{}, err
	}
	return ends[0].Time, nil
}
