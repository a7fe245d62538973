package pipeline

// A backfill reads a provider's subscriptions from its API and applies each one as the
// state of the subscription at the time the page was asked for. That snapshot goes through
// the same mapping, customer resolution and plan mapping as a webhook, and the same
// ordering: it replaces state from events older than it and never from a newer one.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// What a backfill did, or would do, to one subscription.
const (
	BackfillCreated    = "created"
	BackfillUpdated    = "updated"
	BackfillUnchanged  = "unchanged"
	BackfillUnresolved = "unresolved"
	// BackfillFailed: the subscription could not be read (its page's Failed); it is left
	// as it is for a later run.
	BackfillFailed = "failed"
)

// BackfillOptions steers a backfill.
type BackfillOptions struct {
	// Scope names the selection of subscriptions read (the provider's query), so that
	// only the same selection resumes an interrupted run.
	Scope string
	// DryRun reports what would change and writes nothing, not even the cursor.
	DryRun bool
	// Restart forgets where an interrupted run of the same scope stopped.
	Restart bool
}

// Page is one page of a provider's subscriptions, newest first, as its API returns them.
type Page struct {
	Subscriptions []json.RawMessage
	LastID        string // the cursor after this page
	HasMore       bool
	// Failed are the page's subscriptions whose read failed (an answer that was garbage, or
	// an API that kept failing), with why: the run goes on past them.
	Failed []FailedRead
}

// FailedRead is a subscription whose read failed, and why.
type FailedRead struct {
	SubscriptionID, Reason string
}

// PageReader reads the page after the subscription after ("" for the first).
type PageReader func(ctx context.Context, after string) (Page, error)

// SubscriptionState is a canonical subscription row as a backfill reports it.
type SubscriptionState struct {
	Status    string
	PeriodEnd *time.Time
	Plan      string
	UserID    string
}

// BackfillChange is what became of one subscription read from the API.
type BackfillChange struct {
	SubscriptionID string
	CustomerID     string
	Created        time.Time // when the subscription was created at the provider
	Outcome        string    // BackfillCreated, BackfillUpdated, BackfillUnchanged or BackfillUnresolved
	// Before and After are the canonical rows (nil: none). They are equal unless Outcome is
	// created or updated.
	Before, After *SubscriptionState
	// LinkedUser is the user the web customer was linked to by this subscription's
	// metadata.user_id, when it was not linked before.
	LinkedUser string
	// NewerEvent: a webhook event newer than the page is stored, so its state was kept.
	NewerEvent bool
	Reason     string // why an unresolved subscription was left as it was
}

// BackfillSummary counts a run's work. It is also the progress reported after each page.
type BackfillSummary struct {
	Pages, Seen                             int
	Created, Updated, Unchanged, Unresolved int
	// Failed counts the subscriptions whose read failed (not in Seen).
	Failed int
	// Unresolved subscriptions, in the order met: "sub_…: reason".
	UnresolvedIDs []string
	// ResumedAfter is the subscription an earlier, interrupted run stopped after, and
	// ResumedDone how many it had done; both zero for a fresh run.
	ResumedAfter string
	ResumedDone  int
	// Reached is the creation time of the last subscription read: the provider lists the
	// newest first, so the run has covered everything created since.
	Reached time.Time
	// Interrupted: ctx ended; the run stopped after a whole page, with Cursor saved.
	Interrupted bool
	Cursor      string
}

// ErrCursorStuck: the provider said a page has more after it but named no cursor past
// the ones already read; the run stops rather than read the same pages for ever.
var ErrCursorStuck = errors.New("the provider's pages do not move past the cursor")

// errDryRun rolls a dry run's transaction back after its report was taken.
var errDryRun = errors.New("dry run")

// Backfill reads every subscription of provider that read gives from its API, page by
// page, newest first, and applies each in a transaction of its own. After each page it
// saves where it got to (the cursor), so that the same command resumes after an
// interruption, and reports progress. When ctx ends it finishes the page in hand, saves
// the cursor and returns with Interrupted set. report gets every subscription's change.
func (p *Pipeline) Backfill(ctx context.Context, provider string, read PageReader, opts BackfillOptions, report func(BackfillChange), progress func(BackfillSummary)) (BackfillSummary, error) {
	var sum BackfillSummary
	a, ok := p.adapters[provider]
	snapshots, ok2 := a.(billing.Snapshotter)
	if !ok || !ok2 {
		return sum, fmt.Errorf("provider %q has no snapshots to backfill from", provider)
	}
	q := dbq.New(p.db)
	scope := dbq.GetBackfillCursorParams{Provider: provider, Scope: opts.Scope}
	if !opts.DryRun {
		if opts.Restart {
			if err := q.DeleteBackfillCursor(ctx, dbq.DeleteBackfillCursorParams(scope)); err != nil {
				return sum, err
			}
		}
		cur, err := q.GetBackfillCursor(ctx, scope)
		switch {
		case err == nil:
			sum.ResumedAfter, sum.ResumedDone = cur.StartingAfter, int(cur.Done)
		case !errors.Is(err, sql.ErrNoRows):
			return sum, err
		}
	}
	sum.Cursor = sum.ResumedAfter
	// A page once fetched is finished even when ctx ends: its transactions are short,
	// and a half-applied page would only be applied again on resume.
	work := context.WithoutCancel(ctx)
	pace := newSQLitePacer(p.db)
	visited := map[string]bool{sum.Cursor: true}
	for {
		// The snapshot's time is when the page was asked for (the adapter places it among
		// events at its provider's resolution).
		at := p.now()
		page, err := read(ctx, sum.Cursor)
		if ctx.Err() != nil { // ended before or during the fetch: a cancelled fetch is no failure
			sum.Interrupted = true
			return sum, nil
		}
		if err != nil {
			return sum, err
		}
		// A provider that answers "more to come" without moving past the cursor would be
		// read for ever.
		if page.HasMore && visited[page.LastID] {
			return sum, fmt.Errorf("%w: the page after %q ends at %q again", ErrCursorStuck, sum.Cursor, page.LastID)
		}
		visited[page.LastID] = true
		for _, f := range page.Failed {
			sum.Failed++
			report(BackfillChange{SubscriptionID: f.SubscriptionID, Outcome: BackfillFailed, Reason: f.Reason})
		}
		for _, raw := range page.Subscriptions {
			change, err := p.backfillSubscription(work, a, snapshots, raw, at, opts.DryRun)
			if err != nil {
				return sum, fmt.Errorf("subscription %s: %w", change.SubscriptionID, err)
			}
			sum.add(change)
			report(change)
			pace.tick()
		}
		sum.Pages++
		sum.Cursor = page.LastID
		if !opts.DryRun {
			if page.HasMore {
				err = q.SaveBackfillCursor(work, dbq.SaveBackfillCursorParams{
					Provider: provider, Scope: scope.Scope, StartingAfter: sum.Cursor, Done: int64(sum.ResumedDone + sum.Seen), Now: p.now(),
				})
			} else {
				err = q.DeleteBackfillCursor(work, dbq.DeleteBackfillCursorParams(scope))
			}
			if err != nil {
				return sum, err
			}
		}
		progress(sum)
		if !page.HasMore {
			return sum, nil
		}
	}
}

func (sum *BackfillSummary) add(c BackfillChange) {
	sum.Seen++
	sum.Reached = c.Created
	switch c.Outcome {
	case BackfillCreated:
		sum.Created++
	case BackfillUpdated:
		sum.Updated++
	case BackfillUnchanged:
		sum.Unchanged++
	case BackfillUnresolved:
		sum.Unresolved++
		sum.UnresolvedIDs = append(sum.UnresolvedIDs, c.SubscriptionID+": "+c.Reason)
	}
}
