package reconcile

// When serve reconciles: on the schedule reconcile_runs keeps, shared by every process.

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/periodic"
)

// Run runs passes until ctx ends, on the schedule the record keeps: a pass starts once
// the provider's newest pass that counts (any process's; not a dry run, not an interrupted
// one; a failed one counts) finished interval ago or longer, or at once when none has —
// so a fresh database reconciles right after start-up, and a process restarted more
// often than interval still reconciles on time. Processes share one cadence: the lease
// lets one pass run, and whoever holds it checks the record again before starting.
// A pass cut short — by a signal, or a process that died — is due at once, whatever the
// interval: the next process to hold the lease resumes it where it stopped.
// When ctx ends, a pass in progress winds down (it finishes the page in hand, records
// itself as interrupted) and the lease is released before Run returns.
func (r *Reconciler) Run(ctx context.Context, interval time.Duration) {
	// retry is how soon a pass that could not start, or failed without a record, is tried
	// again: not at once, which would be a tight loop, nor a whole interval away. A lease
	// held by another process is looked at more often: if that process died, its lease
	// runs out within LeaseFor and its pass is taken up soon after.
	retry := min(interval, 30*time.Second)
	busyRetry := min(interval, BusyRetry)
	periodic.Run(ctx, nil, func(ctx context.Context) time.Duration {
		wait, err := r.untilDue(ctx, interval)
		busy := false
		if err == nil && wait <= 0 {
			var ran bool
			if ran, err = r.passIfDue(ctx, interval); ran && err == nil {
				return 0 // the record now says when the next pass is due
			}
			busy = !ran && err == nil
		}
		if err != nil && ctx.Err() == nil {
			r.logFailure(err)
		}
		switch {
		case busy:
			return busyRetry
		case wait <= 0 || err != nil:
			return retry // failed: look at the record again soon, not at once
		}
		return wait
	})
}

// Next is when the next scheduled pass is due by the record: interval after the newest
// pass that counts (see Run) ended; the zero time when none has, which is due at once.
func (r *Reconciler) Next(ctx context.Context, interval time.Duration) (time.Time, error) {
	last, err := dbq.New(r.db).LastReconcilePassEnd(ctx, r.opts.Provider)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, err
	}
	return last.Time.Add(interval), nil
}

// BusyRetry is how often a process looks again at a lease another holds.
const BusyRetry = 5 * time.Second

// untilDue is how long until the next pass is due (zero or less: now): at once when the
// newest pass was cut short, else interval after the newest that counts.
func (r *Reconciler) untilDue(ctx context.Context, interval time.Duration) (time.Duration, error) {
	last, err := dbq.New(r.db).LastReconcileRun(ctx, r.opts.Provider)
	switch {
	case err == nil && (last.Interrupted || !last.FinishedAt.Valid):
		return 0, nil
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return 0, err
	}
	next, err := r.Next(ctx, interval)
	if err != nil || next.IsZero() {
		return 0, err
	}
	return next.Sub(r.now()), nil
}

// passIfDue takes the lease and, if the record still says a pass is due (another process
// may have just finished one), runs it. ran says whether it did.
func (r *Reconciler) passIfDue(ctx context.Context, interval time.Duration) (ran bool, err error) {
	ctx, release, err := r.lease.Hold(ctx)
	if err != nil {
		if errors.Is(err, ErrBusy) {
			r.log.Debug("reconcile: another process is reconciling", "provider", r.opts.Provider)
			return false, nil
		}
		return false, err
	}
	defer release()
	if wait, err := r.untilDue(ctx, interval); err != nil || wait > 0 {
		return false, err
	}
	// Before holds leases of its own (a store's history's); the provider's is kept renewed
	// meanwhile, however long it takes.
	if r.opts.Before != nil {
		r.opts.Before(ctx)
	}
	res, err := r.pass(ctx, false)
	if err == nil {
		r.log.Info("reconcile: pass done", "provider", r.opts.Provider, "checked", res.Checked, "drifted", res.Drifted,
			"repaired", res.Repaired, "unresolved", res.Unresolved)
	}
	return true, err
}

func (r *Reconciler) logFailure(err error) {
	switch {
	case errors.Is(err, ErrInterrupted):
		r.log.Info("reconcile: pass interrupted; the next one resumes where it stopped", "provider", r.opts.Provider)
	default:
		r.log.Warn("reconcile: pass failed; the next one resumes", "provider", r.opts.Provider, "error", err)
	}
}
