package billing

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/webprovider"
)

// A backfill reads the web provider's subscriptions from its API and applies each one as
// the state of the subscription at the time the page was asked for. That snapshot goes
// through the same mapping, customer resolution and plan mapping as a webhook, and the
// same ordering: it replaces state from events older than it and never from a newer one.

// webBackfillSnapshot is the last_event_type of a state read from the API by a backfill.
const webBackfillSnapshot = "tollgate.backfill"

// backfillEventID names the snapshot read at at, where an event's id would be.
func backfillEventID(at time.Time) string { return fmt.Sprintf("backfill_%d", at.Unix()) }

// What a backfill did, or would do, to one subscription.
const (
	BackfillCreated    = "created"
	BackfillUpdated    = "updated"
	BackfillUnchanged  = "unchanged"
	BackfillUnresolved = "unresolved"
)

// BackfillOptions narrows and steers a backfill.
type BackfillOptions struct {
	Since    time.Time // only subscriptions created at or after it; zero: all
	Customer string    // only this web customer's subscriptions; empty: all
	// DryRun reports what would change and writes nothing, not even the cursor.
	DryRun bool
	// Restart forgets where an interrupted run of the same scope stopped.
	Restart  bool
	PageSize int // zero: the provider's maximum, 100
}

// scope names the set of subscriptions a run covers, so that only the same command
// resumes an interrupted run.
func (o BackfillOptions) scope() string {
	var parts []string
	if !o.Since.IsZero() {
		parts = append(parts, "since="+o.Since.UTC().Format(time.RFC3339))
	}
	if o.Customer != "" {
		parts = append(parts, "customer="+o.Customer)
	}
	return strings.Join(parts, " ")
}

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

// errDryRun rolls a dry run's transaction back after its report was taken.
var errDryRun = errors.New("dry run")

// Backfill reads every web subscription the options select from the provider's API, page
// by page, newest first, and applies each in a transaction of its own. After each page it
// saves where it got to (the cursor), so that the same command resumes after an
// interruption, and reports progress. When ctx ends it finishes the page in hand, saves
// the cursor and returns with Interrupted set. report gets every subscription's change.
func (s *Service) Backfill(ctx context.Context, api *webprovider.Client, opts BackfillOptions, report func(BackfillChange), progress func(BackfillSummary)) (BackfillSummary, error) {
	var sum BackfillSummary
	q := dbq.New(s.db)
	scope := dbq.GetBackfillCursorParams{Provider: ProviderWeb, Scope: opts.scope()}
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
	pace := newSQLitePacer(s.db)
	for {
		// The snapshot's time is when the page was asked for, to the second, as event
		// times are: an event of the same second may be later than the read, so it wins.
		at := s.now().Truncate(time.Second)
		page, err := api.Subscriptions(ctx, webprovider.SubscriptionQuery{
			CreatedSince: opts.Since, Customer: opts.Customer, StartingAfter: sum.Cursor, Limit: opts.PageSize,
		})
		if ctx.Err() != nil { // ended before or during the fetch: a cancelled fetch is no failure
			sum.Interrupted = true
			return sum, nil
		}
		if err != nil {
			return sum, err
		}
		for _, raw := range page.Subscriptions {
			change, changed, err := s.backfillSubscription(work, raw, at, opts.DryRun)
			if err != nil {
				return sum, fmt.Errorf("subscription %s: %w", change.SubscriptionID, err)
			}
			s.billingChanged(work, changed)
			sum.add(change)
			report(change)
			pace.tick()
		}
		sum.Pages++
		sum.Cursor = page.LastID
		if !opts.DryRun {
			if page.HasMore {
				err = q.SaveBackfillCursor(work, dbq.SaveBackfillCursorParams{
					Provider: ProviderWeb, Scope: scope.Scope, StartingAfter: sum.Cursor, Done: int64(sum.ResumedDone + sum.Seen), Now: s.now(),
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

// backfillSubscription applies one subscription object read at time at, in a transaction
// of its own, and says what changed. A dry run rolls the transaction back.
func (s *Service) backfillSubscription(ctx context.Context, raw json.RawMessage, at time.Time, dryRun bool) (BackfillChange, []string, error) {
	sub, err := decodeWebSubscription(raw)
	change := BackfillChange{SubscriptionID: sub.ID, CustomerID: string(sub.Customer), Created: time.Unix(sub.Created, 0).UTC()}
	if err != nil {
		change.Outcome, change.Reason = BackfillUnresolved, err.Error()
		return change, nil, nil
	}
	var changed []string
	var wrote string // the user whose canonical row was written
	err = s.db.InTx(ctx, func(tx *sql.Tx) error {
		q := &txn{Queries: dbq.New(tx), cause: ChangeCause{Provider: ProviderWeb, ProviderEventID: backfillEventID(at), EventType: webBackfillSnapshot}}
		if _, err := tx.ExecContext(ctx, "savepoint backfill"); err != nil {
			return err
		}
		// The row lock first, so that what is reported as before is not a concurrent
		// webhook's doing.
		ps, err := q.LockProviderSubscription(ctx, dbq.LockProviderSubscriptionParams{Provider: ProviderWeb, ProviderSubscriptionID: sub.ID, Now: s.now()})
		if err != nil {
			return err
		}
		if change.Before, err = canonicalSubscription(ctx, q, sub.ID); err != nil {
			return err
		}
		linkedBefore, err := linkedUser(ctx, q, change.CustomerID)
		if err != nil {
			return err
		}
		change.NewerEvent, err = s.applyWebState(ctx, q, ps, raw, sub, at)
		var perm permanentError
		var unres unresolvedError
		if errors.As(err, &unres) || errors.As(err, &perm) {
			if _, err := tx.ExecContext(ctx, "rollback to savepoint backfill"); err != nil {
				return err
			}
			change.Outcome, change.Reason, change.After = BackfillUnresolved, err.Error(), change.Before
			return nil
		}
		if err != nil {
			return err
		}
		if change.After, err = canonicalSubscription(ctx, q, sub.ID); err != nil {
			return err
		}
		linkedAfter, err := linkedUser(ctx, q, change.CustomerID)
		if err != nil {
			return err
		}
		if linkedBefore == "" && linkedAfter != "" {
			change.LinkedUser = linkedAfter
		}
		switch {
		case change.Before == nil && change.After != nil:
			change.Outcome = BackfillCreated
		case !reflect.DeepEqual(change.Before, change.After) || change.LinkedUser != "":
			change.Outcome = BackfillUpdated
		default:
			change.Outcome = BackfillUnchanged
		}
		changed = q.changed
		if dryRun {
			return errDryRun
		}
		wrote = q.user
		return nil
	})
	if errors.Is(err, errDryRun) {
		return change, nil, nil
	}
	if err == nil {
		s.answers.forget(append(changed, wrote)...)
	}
	return change, changed, err
}

// applyWebState stores a subscription object read from the API at time at as the locked
// subscription's snapshot, unless a newer event is stored (newerEvent), and writes the
// canonical row from whichever snapshot stands.
func (s *Service) applyWebState(ctx context.Context, q *txn, ps providerSubscription, raw json.RawMessage, sub webSubscription, at time.Time) (newerEvent bool, _ error) {
	var stored *webSubscription // the stored snapshot's subscription, when it is this one
	switch {
	case ps.LastEventID.Valid && (ps.LastEventType.String == webSubscriptionDeleted || !at.After(ps.LastEventAt.Time)):
		// A deletion is final, and an event as new as the read or newer may hold a change
		// the read did not see: either way the stored state stands.
		newerEvent = true
	case ps.LastEventType.String == webBackfillSnapshot && sameObject(ps.State, raw):
		// Nothing changed since the last backfill read it: a second run writes nothing.
	default:
		state, err := json.Marshal(webSnapshot{Object: raw})
		if err != nil {
			return false, err
		}
		ps.State = string(state)
		ps.ProviderCustomerID = nullString(string(sub.Customer))
		ps.LastEventID = nullString(backfillEventID(at))
		ps.LastEventType, ps.LastEventAt = nullString(webBackfillSnapshot), nullTime(&at)
		if err := s.saveProviderSubscription(ctx, q, ps); err != nil {
			return false, err
		}
		stored = &sub
	}
	_, err := s.materialiseWeb(ctx, q, ps, stored, outcomeApplied)
	return newerEvent, err
}

// sameObject says whether a stored snapshot holds this object, compared as JSON values.
func sameObject(state string, object json.RawMessage) bool {
	var stored webSnapshot
	var a, b any
	return json.Unmarshal([]byte(state), &stored) == nil && json.Unmarshal(stored.Object, &a) == nil &&
		json.Unmarshal(object, &b) == nil && reflect.DeepEqual(a, b)
}

func canonicalSubscription(ctx context.Context, q *txn, subscriptionID string) (*SubscriptionState, error) {
	row, err := q.GetCanonicalSubscription(ctx, dbq.GetCanonicalSubscriptionParams{Provider: ProviderWeb, ProviderSubscriptionID: subscriptionID})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &SubscriptionState{Status: row.Status, PeriodEnd: timePtr(row.CurrentPeriodEnd), Plan: row.PlanKey, UserID: row.UserID}, nil
}

// linkedUser is the user a web customer id is linked to, or "".
func linkedUser(ctx context.Context, q *txn, webCustomerID string) (string, error) {
	if webCustomerID == "" {
		return "", nil
	}
	c, err := q.GetCustomerByWebID(ctx, nullString(webCustomerID))
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return c.UserID, err
}
