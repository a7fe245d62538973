package reconcile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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

// windowMargin is how far inside the store's window a read's start is kept: the store
// measures its window when the request arrives, some time after the start is worked out.
// A store that still finds the start too far back (its clock ahead of ours) is asked once
// more with a start laterMargin inside the window.
const (
	windowMargin = time.Hour
	laterMargin  = 24 * time.Hour
)

// HistoryOptions configures a History.
type HistoryOptions struct {
	Provider, Environment string
	// MaxBack is how far back the store keeps its history (the App Store: 180 days in
	// Production, 30 in Sandbox; Google Play's voided purchases: 30 days); a read never
	// starts earlier, nor so close to it that the store finds it older when it arrives.
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
	return &History{db: d, pipeline: p, log: log, opts: opts, lease: lease.New(d, holds, LeaseFor, ErrBusy, opts.Clock, log)}
}

// Environment is the store environment h reads.
func (h *History) Environment() string { return h.opts.Environment }

// Start is where a catch-up wants to begin: since when given, else a margin before the
// end of the last complete read, else the earliest stored event of the provider, else
// now.
func (h *History) Start(ctx context.Context, since time.Time) (time.Time, error) {
	if !since.IsZero() {
		return since, nil
	}
	q := dbq.New(h.db)
	until, err := q.GetStoreHistory(ctx, dbq.GetStoreHistoryParams{Provider: h.opts.Provider, Environment: h.opts.Environment})
	switch {
	case err == nil:
		return until.Add(-historyMargin), nil
	case !errors.Is(err, sql.ErrNoRows):
		return time.Time{}, err
	}
	start, err := q.EarliestProviderEvent(ctx, h.opts.Provider)
	if errors.Is(err, sql.ErrNoRows) {
		return h.opts.Clock(), nil
	}
	return start, err
}

// window is one read of the history: from start (where it wanted to be, and why it is
// not) to end, going on at page.
type window struct {
	wanted, start, end time.Time
	note               string
	page               string
	resumed            bool
}

// CatchUp reads the store's history from Start to now and applies what tollgate has not
// stored (pipeline.CatchUp), page by page, under the provider's history lease (ErrBusy
// while another process holds it). It keeps its place after every page: a read cut short
// — by a signal, a failure or a process that died — is taken up where it stopped by the
// next catch-up of any process. A start older than the store keeps is moved inside its
// window, and the read says so (its note). A complete read moves the time up to which the
// history is held to its end. A dry run neither resumes nor keeps its place.
func (h *History) CatchUp(ctx context.Context, since time.Time, opts pipeline.CatchUpOptions) (pipeline.CatchUpSummary, error) {
	ctx, release, err := h.lease.Hold(ctx)
	if err != nil {
		return pipeline.CatchUpSummary{}, err
	}
	defer release()
	w, err := h.plan(ctx, since, opts.DryRun)
	if err != nil {
		return pipeline.CatchUpSummary{}, err
	}
	total, err := h.readWindow(ctx, w, opts)
	if err != nil || !w.resumed || !h.opts.Clock().After(w.end) {
		return total, err
	}
	// The resumed read ended where the interrupted one meant to; the history since then is
	// read too, so a catch-up always reaches now.
	if w, err = h.plan(ctx, time.Time{}, false); err != nil {
		return total, err
	}
	sum, err := h.readWindow(ctx, w, opts)
	return add(total, sum), err
}

// readWindow reads w to its end, retrying as retry says, and records it complete.
func (h *History) readWindow(ctx context.Context, w window, opts pipeline.CatchUpOptions) (pipeline.CatchUpSummary, error) {
	var total pipeline.CatchUpSummary
	for try := 0; ; try++ {
		sum, err := h.read(ctx, w, opts)
		total = add(total, sum)
		retry, ok := h.retry(err, w, sum, try)
		if !ok {
			if err == nil && !opts.DryRun {
				err = h.complete(ctx, w, total)
			}
			return total, err
		}
		w = retry
	}
}

// retry is the window to read again after a read that failed with err, if any: a resumed
// read whose window or page the store no longer takes begins afresh; a start the store
// finds too far back moves later, once.
func (h *History) retry(err error, w window, sum pipeline.CatchUpSummary, try int) (window, bool) {
	if err == nil || try >= 2 {
		return window{}, false
	}
	now := h.opts.Clock()
	switch {
	case w.resumed && (errors.Is(err, billing.ErrHistoryPageExpired) || errors.Is(err, billing.ErrHistoryStartTooOld)):
		fresh := h.clip(w.wanted, now)
		return fresh, true
	case errors.Is(err, billing.ErrHistoryStartTooOld) && sum.Pages == 0:
		later := now.Add(-h.opts.MaxBack + laterMargin)
		if !later.After(w.start) {
			return window{}, false
		}
		w.note = fmt.Sprintf("the store found a start of %s too far back: read from %s", stamp(w.start), stamp(later))
		w.start, w.end, w.page = later, now, ""
		return w, true
	}
	return window{}, false
}

// plan is the read to make: the one an earlier catch-up left unfinished, or a new one.
func (h *History) plan(ctx context.Context, since time.Time, dryRun bool) (window, error) {
	q := dbq.New(h.db)
	if since.IsZero() && !dryRun {
		r, err := q.GetHistoryRead(ctx, dbq.GetHistoryReadParams{Provider: h.opts.Provider, Environment: h.opts.Environment})
		switch {
		case err == nil && r.NextPage.Valid:
			return window{wanted: r.Wanted, start: r.ReadFrom, end: r.ReadTo, note: r.Note, page: r.NextPage.String, resumed: true}, nil
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return window{}, err
		}
	}
	wanted, err := h.Start(ctx, since)
	if err != nil {
		return window{}, err
	}
	return h.clip(wanted, h.opts.Clock()), nil
}

// clip is a new read from wanted to now, its start kept inside the store's window.
func (h *History) clip(wanted, now time.Time) window {
	w := window{wanted: wanted, start: wanted, end: now}
	if earliest := now.Add(-h.opts.MaxBack + windowMargin); wanted.Before(earliest) {
		w.start = earliest
		w.note = fmt.Sprintf("wanted %s, but the store keeps %s of history: read from %s", stamp(wanted), days(h.opts.MaxBack), stamp(earliest))
	}
	return w
}

// read reads w from its page on, keeping its place after every page unless a dry run.
func (h *History) read(ctx context.Context, w window, opts pipeline.CatchUpOptions) (pipeline.CatchUpSummary, error) {
	q := dbq.New(h.db)
	key := dbq.GetHistoryReadParams{Provider: h.opts.Provider, Environment: h.opts.Environment}
	if !opts.DryRun && !w.resumed {
		err := q.StartHistoryRead(ctx, dbq.StartHistoryReadParams{Provider: key.Provider, Environment: key.Environment,
			Wanted: w.wanted.UTC(), ReadFrom: w.start.UTC(), ReadTo: w.end.UTC(), Note: w.note, Now: h.now()})
		if err != nil {
			return pipeline.CatchUpSummary{}, err
		}
	}
	opts.From = w.page
	if !opts.DryRun {
		// The place is kept whatever ctx does: a read cut short resumes after the page it applied.
		record := context.WithoutCancel(ctx)
		opts.PageDone = func(next string) error {
			return q.HistoryReadPageDone(record, dbq.HistoryReadPageDoneParams{Provider: key.Provider, Environment: key.Environment,
				NextPage: sql.NullString{String: next, Valid: next != ""}, Now: h.now()})
		}
	}
	return h.pipeline.CatchUp(ctx, h.opts.Provider, func(ctx context.Context, page string) (billing.HistoryPage, error) {
		return h.opts.Read(ctx, w.start, w.end, page)
	}, opts)
}

// complete records a complete read: the history is held up to its end.
func (h *History) complete(ctx context.Context, w window, sum pipeline.CatchUpSummary) error {
	err := dbq.New(h.db).SetStoreHistory(ctx, dbq.SetStoreHistoryParams{Provider: h.opts.Provider, Environment: h.opts.Environment,
		CompleteUntil: w.end.UTC(), Now: h.now()})
	if err != nil {
		return err
	}
	if sum.Applied > 0 || sum.Refused > 0 || w.note != "" {
		h.log.InfoContext(ctx, "caught up from the store's history", "provider", h.opts.Provider, "environment", h.opts.Environment,
			"from", w.start.UTC(), "to", w.end.UTC(), "read", sum.Read, "applied", sum.Applied, "refused", sum.Refused, "note", w.note)
	}
	return nil
}

func (h *History) now() time.Time { return h.opts.Clock().UTC() }

func add(a, b pipeline.CatchUpSummary) pipeline.CatchUpSummary {
	return pipeline.CatchUpSummary{Pages: a.Pages + b.Pages, Read: a.Read + b.Read, Applied: a.Applied + b.Applied,
		Stored: a.Stored + b.Stored, Refused: a.Refused + b.Refused}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func days(d time.Duration) string { return fmt.Sprintf("%d days", int(d.Hours()/24)) }
