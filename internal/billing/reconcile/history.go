package reconcile

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/lease"
)

// historyMargin is how far before the end of the last complete read the next one starts:
// a notification Apple was still sending then is read again rather than missed.
const historyMargin = 10 * time.Minute

// HistoryOptions configures a History.
type HistoryOptions struct {
	Provider, Environment string
	// MaxBack is how far back the store keeps its history (the App Store: 180 days in
	// Production, 30 in Sandbox); a read never starts earlier.
	MaxBack time.Duration
	// Read reads the page of the store's history between start and end that page names.
	Read  func(ctx context.Context, start, end time.Time, page string) (billing.HistoryPage, error)
	Clock func() time.Time
}

// History catches up on the notifications a store sent while tollgate did not hear them,
// from the store's own record of them, and keeps the time up to which it holds them all.
type History struct {
	db       *db.DB
	pipeline *pipeline.Pipeline
	log      *slog.Logger
	opts     HistoryOptions
	lease    *lease.Lease
}

// NewHistory builds a History over one store environment.
func NewHistory(d *db.DB, p *pipeline.Pipeline, log *slog.Logger, opts HistoryOptions) *History {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	// A lease of its own, apart from the provider's passes: a scheduled pass catches up
	// first, while it holds the provider's.
	holds := opts.Provider + " history " + opts.Environment
	return &History{db: d, pipeline: p, log: log, opts: opts, lease: lease.New(d, holds, leaseFor, ErrBusy, opts.Clock, log)}
}

// Environment is the store environment h reads.
func (h *History) Environment() string { return h.opts.Environment }

// Start is where a catch-up begins: since when given, else a margin before the end of the
// last complete read, else the earliest stored event of the provider, else now; never
// before the store's history begins.
func (h *History) Start(ctx context.Context, since time.Time) (time.Time, error) {
	now := h.opts.Clock()
	start := since
	if start.IsZero() {
		q := dbq.New(h.db)
		until, err := q.GetStoreHistory(ctx, dbq.GetStoreHistoryParams{Provider: h.opts.Provider, Environment: h.opts.Environment})
		switch {
		case err == nil:
			start = until.Add(-historyMargin)
		case errors.Is(err, sql.ErrNoRows):
			if start, err = q.EarliestProviderEvent(ctx, h.opts.Provider); errors.Is(err, sql.ErrNoRows) {
				start, err = now, nil
			}
			if err != nil {
				return time.Time{}, err
			}
		default:
			return time.Time{}, err
		}
	}
	if earliest := now.Add(-h.opts.MaxBack); start.Before(earliest) {
		start = earliest
	}
	return start, nil
}

// CatchUp reads the store's history from Start to now and applies what tollgate has not
// stored (pipeline.CatchUp), under the provider's lease (ErrBusy while another process
// holds it). A complete read that applied, not a dry run, moves the time up to which the
// history is held to its end.
func (h *History) CatchUp(ctx context.Context, since time.Time, opts pipeline.CatchUpOptions) (pipeline.CatchUpSummary, error) {
	if err := h.lease.Take(ctx); err != nil {
		return pipeline.CatchUpSummary{}, err
	}
	defer h.lease.Release()
	start, err := h.Start(ctx, since)
	if err != nil {
		return pipeline.CatchUpSummary{}, err
	}
	end := h.opts.Clock()
	read := func(ctx context.Context, page string) (billing.HistoryPage, error) {
		if err := h.lease.Take(ctx); err != nil { // renewed before each page
			return billing.HistoryPage{}, err
		}
		return h.opts.Read(ctx, start, end, page)
	}
	sum, err := h.pipeline.CatchUp(ctx, h.opts.Provider, read, opts)
	if err != nil || opts.DryRun {
		return sum, err
	}
	err = dbq.New(h.db).SetStoreHistory(ctx, dbq.SetStoreHistoryParams{Provider: h.opts.Provider, Environment: h.opts.Environment,
		CompleteUntil: end.UTC(), Now: h.opts.Clock().UTC()})
	if err == nil && (sum.Applied > 0 || sum.Refused > 0) {
		h.log.InfoContext(ctx, "caught up from the store's history", "provider", h.opts.Provider, "environment", h.opts.Environment,
			"from", start.UTC(), "to", end.UTC(), "read", sum.Read, "applied", sum.Applied, "refused", sum.Refused)
	}
	return sum, err
}
