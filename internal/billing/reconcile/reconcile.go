// Package reconcile compares a provider's subscriptions, read from its API, with tollgate's
// state and repairs what differs (drift): webhooks lost past the provider's retry window,
// or never sent. Each pass is a backfill (the pipeline's, so a newer stored webhook still
// wins and an interrupted pass resumes where it stopped), held by one process at a time
// through a lease, recorded in reconcile_runs, counted in a metric and logged per drifted
// subscription.
package reconcile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/lease"
)

// scope is the backfill cursor's scope of reconciliation: every subscription, any status.
const scope = "reconcile"

// LeaseFor is how long a lease holds without renewal; its holder renews it every third of
// that while it lives (lease.Hold), so only a process that died lets it run out, and
// another takes the work up soon after.
const LeaseFor = 20 * time.Second

// ErrBusy: another process holds the provider's lease; this pass was skipped.
var ErrBusy = errors.New("another process is reconciling this provider")

// ErrInterrupted: the pass was cut short (its context ended) after the pages it recorded;
// the next pass resumes where it stopped.
var ErrInterrupted = errors.New("the reconcile pass was interrupted")

// Options configures a Reconciler.
type Options struct {
	// Provider is the provider reconciled and Read its API's pages (with their pacing and
	// backoff on 429).
	Provider string
	Read     pipeline.PageReader
	// Registerer takes tollgate_reconcile_drift_total (one metric, shared by every
	// provider's Reconciler); nil registers nothing.
	Registerer prometheus.Registerer
	Clock      func() time.Time
	// Before, when set, runs before each scheduled pass (Run), under the provider's lease:
	// a store's history caught up on, say (under a lease of its own), so that the pass
	// finds what it applied. It logs its own failures.
	Before func(ctx context.Context)
}

// Reconciler runs passes over one provider.
type Reconciler struct {
	db       *db.DB
	pipeline *pipeline.Pipeline
	log      *slog.Logger
	opts     Options
	lease    *lease.Lease
	drift    prometheus.Counter
}

// New builds a Reconciler.
func New(d *db.DB, p *pipeline.Pipeline, log *slog.Logger, opts Options) *Reconciler {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	drift := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_reconcile_drift_total",
		Help: "Subscriptions whose state at the provider differed from tollgate's when reconciled, by provider.",
	}, []string{"provider"})
	if opts.Registerer != nil {
		drift = register(opts.Registerer, drift)
	}
	return &Reconciler{db: d, pipeline: p, log: log, opts: opts, lease: lease.New(d, opts.Provider, LeaseFor, ErrBusy, opts.Clock, log), drift: drift.WithLabelValues(opts.Provider)}
}

// register registers drift, or finds the one another provider's Reconciler registered.
func register(reg prometheus.Registerer, drift *prometheus.CounterVec) *prometheus.CounterVec {
	err := reg.Register(drift)
	var already prometheus.AlreadyRegisteredError
	switch {
	case err == nil:
		return drift
	case errors.As(err, &already):
		return already.ExistingCollector.(*prometheus.CounterVec)
	}
	panic(err) // a metric of that name but another shape: a programming error, as MustRegister says
}

// Result is what one pass did.
type Result struct {
	Checked, Drifted, Repaired, Unresolved int
	// Failed counts the subscriptions whose read failed: left for the next pass.
	Failed      int
	Interrupted bool
	// Notes are what the reads said of the pass as a whole (notes.go), one line each.
	Notes string
}

// Pass runs one pass: it takes the lease (ErrBusy when another process holds it), reads
// every subscription, repairs drift (or, with dryRun, only reports it), and records the
// run, its counts after every page. A pass cut short (ctx ended) is recorded as
// interrupted, keeps its place for the next one, and releases the lease.
func (r *Reconciler) Pass(ctx context.Context, dryRun bool) (Result, error) {
	ctx, release, err := r.lease.Hold(ctx)
	if err != nil {
		return Result{}, err
	}
	defer release()
	return r.pass(ctx, dryRun)
}

// pass runs a pass under the lease the caller holds. A pass of the provider left
// unfinished is one whose process died (only the holder runs one): it is recorded as
// interrupted first.
func (r *Reconciler) pass(ctx context.Context, dryRun bool) (Result, error) {
	q := dbq.New(r.db)
	if err := q.InterruptStaleReconcileRuns(ctx, dbq.InterruptStaleReconcileRunsParams{Provider: r.opts.Provider, Now: sql.NullTime{Time: r.now(), Valid: true}}); err != nil {
		return Result{}, err
	}
	runID, err := q.StartReconcileRun(ctx, dbq.StartReconcileRunParams{Provider: r.opts.Provider, DryRun: dryRun, Now: r.now()})
	if err != nil {
		return Result{}, err
	}
	var res Result
	var drift strings.Builder
	notes := &notes{}
	ctx = context.WithValue(ctx, notesKey{}, notes)
	// The record is written whatever ctx does: a pass cut short still says how far it got.
	record := context.WithoutCancel(ctx)
	progress := func(sum pipeline.BackfillSummary) {
		res.Checked, res.Unresolved, res.Failed, res.Notes = sum.Seen, sum.Unresolved, sum.Failed, notes.String()
		err := q.RecordReconcileProgress(record, dbq.RecordReconcileProgressParams{
			ID: runID, Checked: int64(res.Checked), Drifted: int64(res.Drifted), Repaired: int64(res.Repaired),
			Unresolved: int64(res.Unresolved), Failed: int64(res.Failed), Drift: drift.String(), Notes: res.Notes,
		})
		if err != nil {
			r.log.WarnContext(ctx, "reconcile: progress not recorded", "provider", r.opts.Provider, "error", err)
		}
	}
	sum, err := r.pipeline.Backfill(ctx, r.opts.Provider, r.opts.Read, pipeline.BackfillOptions{Scope: scope, DryRun: dryRun},
		func(c pipeline.BackfillChange) { r.record(ctx, c, dryRun, &res, &drift) }, progress)
	res.Checked, res.Unresolved, res.Failed, res.Notes = sum.Seen, sum.Unresolved, sum.Failed, notes.String()
	res.Interrupted = sum.Interrupted || (err != nil && ctx.Err() != nil)
	if err == nil && res.Checked == 0 && res.Failed > 0 {
		err = fmt.Errorf("every subscription's read failed (%d); the reasons are logged", res.Failed)
	}
	finish := dbq.FinishReconcileRunParams{
		ID: runID, Now: sql.NullTime{Time: r.now(), Valid: true}, Checked: int64(res.Checked), Drifted: int64(res.Drifted),
		Repaired: int64(res.Repaired), Unresolved: int64(res.Unresolved), Failed: int64(res.Failed), Drift: drift.String(),
		Notes: res.Notes, Interrupted: res.Interrupted,
	}
	if err != nil && !res.Interrupted {
		finish.Error = sql.NullString{String: err.Error(), Valid: true}
	}
	if ferr := q.FinishReconcileRun(record, finish); ferr != nil && err == nil {
		err = ferr
	}
	if res.Interrupted {
		return res, ErrInterrupted
	}
	return res, err
}

// record notes one subscription's outcome: a created or updated one is drift; an
// unresolved one (a read that did not verify, a purchase the store does not know) is
// logged with why.
func (r *Reconciler) record(ctx context.Context, c pipeline.BackfillChange, dryRun bool, res *Result, drift *strings.Builder) {
	switch c.Outcome {
	case pipeline.BackfillUnresolved:
		r.log.WarnContext(ctx, "reconcile: subscription left as it was", "provider", r.opts.Provider, "subscription", c.SubscriptionID, "reason", c.Reason)
	case pipeline.BackfillFailed:
		r.log.WarnContext(ctx, "reconcile: subscription not read; the next pass reads it again", "provider", r.opts.Provider, "subscription", c.SubscriptionID, "reason", c.Reason)
	}
	if c.Outcome != pipeline.BackfillCreated && c.Outcome != pipeline.BackfillUpdated {
		return
	}
	res.Drifted++
	if !dryRun {
		res.Repaired++
		r.drift.Inc()
	}
	before, after := describe(c.Before), describe(c.After)
	fmt.Fprintf(drift, "%s: %s → %s\n", c.SubscriptionID, before, after)
	r.log.WarnContext(ctx, "reconcile: drift", "provider", r.opts.Provider, "subscription", c.SubscriptionID,
		"before", before, "after", after, "repaired", !dryRun)
}

// describe writes a canonical row as the drift lines show it.
func describe(s *pipeline.SubscriptionState) string {
	if s == nil {
		return "none"
	}
	end := ""
	if s.PeriodEnd != nil {
		end = " until " + s.PeriodEnd.UTC().Format(time.DateOnly)
	}
	return s.Plan + " " + s.Status + end
}

func (r *Reconciler) now() time.Time { return r.opts.Clock().UTC() }
