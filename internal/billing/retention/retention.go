// Package retention removes stored events past the retention window (EVENT_RETENTION), in
// small steps, one process at a time, leaving each a key so that a redelivery is still
// recognised (the pipeline checks it), and archiving them first when asked. It never
// removes a subscription's newest event, which the ordering rule reads, nor an event
// still unresolved or unprocessed until its own, longer window has passed. The audit log
// is not an event and is never removed.
package retention

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/lease"
	"github.com/tollgate/tollgate/internal/periodic"
)

// Options are the retention settings.
type Options struct {
	// Window is how long an event is kept after it was received; Unresolved how long an
	// unresolved or unprocessed one is.
	Window, Unresolved time.Duration
	// ArchiveDir, when set, is where each day's removed events are written first, as
	// events-YYYY-MM-DD.ndjson.gz (one gzip member per step, appended).
	ArchiveDir string
	Clock      func() time.Time
	Log        *slog.Logger
}

// Result is what a pass removed (or, dry, would remove).
type Result struct {
	Removed int
	// Unresolved of Removed were unresolved or unprocessed, past their longer window.
	Unresolved int
	// Archived are the files written to.
	Archived []string
}

// ErrBusy: another process is pruning.
var ErrBusy = errors.New("another process is removing old events now")

// Pruner removes old events.
type Pruner struct {
	db    *db.DB
	opts  Options
	lease *lease.Lease
}

// New is a pruner of d's events.
func New(d *db.DB, opts Options) *Pruner {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Pruner{db: d, opts: opts, lease: lease.New(d, leaseKey, 10*time.Minute, ErrBusy, opts.Clock, opts.Log)}
}

// step is how many events one transaction removes when they are archived first, two
// statements each: small, so that ingestion waits on no long transaction.
const step = 500

// leaseKey is retention's row in reconcile_leases, the table of jobs one process runs at a time.
const leaseKey = "retention"

// Pass removes every event past the window now, in steps; dryRun only counts them.
func (p *Pruner) Pass(ctx context.Context, dryRun bool) (Result, error) {
	var res Result
	if !dryRun {
		if err := p.lease.Take(ctx); err != nil {
			return res, err
		}
		defer p.lease.Release()
	}
	now := p.opts.Clock().UTC()
	if !dryRun && p.opts.ArchiveDir == "" {
		return p.removeInBulk(ctx, now)
	}
	page := dbq.PrunableEventsParams{Cutoff: now.Add(-p.opts.Window), UnresolvedCutoff: now.Add(-p.opts.Unresolved), Max: step, AfterID: firstID}
	for {
		rows, err := dbq.New(p.db).PrunableEvents(ctx, page)
		if err != nil {
			return res, err
		}
		if dryRun {
			count(&res, rows)
		} else if err := p.remove(ctx, rows, &res); err != nil {
			return res, err
		}
		if len(rows) < step {
			return res, nil
		}
		last := rows[len(rows)-1]
		page.AfterReceived, page.AfterID = last.ReceivedAt, last.ID
	}
}

// bigStep is how many events one transaction removes without an archive, in a few
// statements, whatever its size: one on Postgres, two on SQLite.
const bigStep = 5000

// removeInBulk removes every event past the window now, bigStep at a time, each leaving
// its key: what a pass does when nothing is archived, so nothing need be read.
func (p *Pruner) removeInBulk(ctx context.Context, now time.Time) (Result, error) {
	var res Result
	cutoff, unresolvedCutoff := now.Add(-p.opts.Window), now.Add(-p.opts.Unresolved)
	for {
		if err := p.lease.Take(ctx); err != nil {
			return res, err
		}
		removed, unresolved, err := p.bulkStep(ctx, cutoff, unresolvedCutoff, now)
		if err != nil {
			return res, err
		}
		res.Removed += removed
		res.Unresolved += unresolved
		if removed < bigStep {
			return res, nil
		}
	}
}

// bulkStep removes the first bigStep events past the window: on Postgres in one statement,
// which no concurrent write can come between; on SQLite in one transaction of its single
// writer.
func (p *Pruner) bulkStep(ctx context.Context, cutoff, unresolvedCutoff, now time.Time) (removed, unresolved int, err error) {
	if p.db.Engine == db.Postgres {
		n, err := dbq.New(p.db).PruneEventsAtOnce(ctx, dbq.PruneEventsAtOnceParams{Cutoff: cutoff, UnresolvedCutoff: unresolvedCutoff, Max: bigStep, Now: now})
		return int(n.Removed), int(n.Unresolved), err
	}
	err = p.db.InTx(ctx, func(tx *sql.Tx) error {
		q := dbq.New(tx)
		err := q.KeepPrunableKeys(ctx, dbq.KeepPrunableKeysParams{Cutoff: cutoff, UnresolvedCutoff: unresolvedCutoff, Max: bigStep, Now: now})
		if err != nil {
			return err
		}
		flags, err := q.DeletePrunable(ctx, dbq.DeletePrunableParams{Cutoff: cutoff, UnresolvedCutoff: unresolvedCutoff, Max: bigStep})
		removed = len(flags)
		for _, f := range flags {
			if f.Bool {
				unresolved++
			}
		}
		return err
	})
	return removed, unresolved, err
}

// count adds rows to what res says was removed.
func count(res *Result, rows []dbq.PrunableEventsRow) {
	for _, r := range rows {
		res.Removed++
		if !r.ProcessedAt.Valid || r.Outcome.String == "unresolved" { // kept the longer window
			res.Unresolved++
		}
	}
}

// remove archives rows (when asked), then, in one transaction, keeps each one's key and
// deletes it.
func (p *Pruner) remove(ctx context.Context, rows []dbq.PrunableEventsRow, res *Result) error {
	if len(rows) == 0 {
		return nil
	}
	if err := p.lease.Take(ctx); err != nil { // renewed each step: a long pass keeps it
		return err
	}
	if p.opts.ArchiveDir != "" {
		files, err := p.archive(rows)
		if err != nil {
			return err
		}
		res.Archived = slices.Compact(append(res.Archived, files...)) // a day's file spans steps
	}
	now := p.opts.Clock().UTC()
	err := p.db.InTx(ctx, func(tx *sql.Tx) error {
		q := dbq.New(tx)
		for _, r := range rows {
			if err := q.RememberPrunedEvent(ctx, dbq.RememberPrunedEventParams{Provider: r.Provider, ProviderEventID: r.ProviderEventID, Now: now}); err != nil {
				return err
			}
			if err := q.DeleteProviderEvent(ctx, r.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		count(res, rows)
	}
	return err
}

// archive appends rows to their days' files, one gzip member per file per step; a crash
// before the removal commits archives those rows twice, never loses one.
func (p *Pruner) archive(rows []dbq.PrunableEventsRow) ([]string, error) {
	byDay := map[string][]Record{}
	var days []string
	for _, r := range rows {
		day := r.ReceivedAt.UTC().Format(time.DateOnly)
		if byDay[day] == nil {
			days = append(days, day)
		}
		byDay[day] = append(byDay[day], recordOf(dbq.EventsBeforeRow(r)))
	}
	var files []string
	for _, day := range days {
		path := filepath.Join(p.opts.ArchiveDir, "events-"+day+".ndjson.gz")
		if err := appendGzip(path, byDay[day]); err != nil {
			return files, fmt.Errorf("ARCHIVE_DIR: %w", err)
		}
		files = append(files, path)
	}
	return files, nil
}

// appendGzip appends records to path as one whole gzip member, or leaves the file as it
// was: the member is made first (a step's records, in memory), then written after the
// file's end and synced; a write that fails — a full disk — is cut back off, so that no
// torn member is ever followed by the next step's, which gzip could not read past.
func appendGzip(path string, records []Record) error {
	var member bytes.Buffer
	zw := gzip.NewWriter(&member)
	enc := json.NewEncoder(zw)
	enc.SetEscapeHTML(false)
	for _, r := range records {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err == nil {
		if _, err = f.Write(member.Bytes()); err == nil {
			err = f.Sync()
		}
		if err != nil {
			// Cutting back needs no space; if even that fails, the removal does not happen and
			// the next pass appends after what is here, so say so.
			if cutErr := f.Truncate(end); cutErr != nil {
				err = fmt.Errorf("%w (and cutting the partial write off failed: %v)", err, cutErr)
			}
			f.Sync()
		}
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	return err
}

// Every is how often serve removes old events, after a first pass at start-up.
const Every = time.Hour

// Run removes old events at once and then every Every until ctx ends, logging each pass
// that removed any. Another process pruning is no failure: it is doing the work.
func (p *Pruner) Run(ctx context.Context) {
	periodic.Run(ctx, nil, func(ctx context.Context) time.Duration {
		res, err := p.Pass(ctx, false)
		switch {
		case ctx.Err() != nil, errors.Is(err, ErrBusy):
		case err != nil:
			p.opts.Log.Warn("retention: removing old events failed; trying again next hour", "removed", res.Removed, "error", err)
		case res.Removed > 0:
			p.opts.Log.Info("retention: removed old events", "removed", res.Removed, "unresolved", res.Unresolved,
				"window", p.opts.Window.String(), "archived", len(res.Archived))
		}
		return Every
	})
}
