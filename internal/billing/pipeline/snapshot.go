package pipeline

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"reflect"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// backfillSubscription applies one subscription read from the API at time at, in a
// transaction of its own, and says what changed. A dry run rolls the transaction back.
func (p *Pipeline) backfillSubscription(ctx context.Context, a billing.Adapter, snapshots billing.Snapshotter, raw json.RawMessage, at time.Time, dryRun bool) (BackfillChange, error) {
	r, info, err := snapshots.ReadSnapshot(raw, at)
	change := BackfillChange{SubscriptionID: info.Subscription, CustomerID: info.Customer, Created: info.Created}
	if err != nil {
		change.Outcome, change.Reason = BackfillUnresolved, err.Error()
		return change, nil
	}
	eventID := billing.SnapshotEventID(at)
	var w *work
	err = p.db.InTx(ctx, func(tx *sql.Tx) error {
		w = newWork(tx, a, billing.ChangeCause{Provider: a.Provider(), ProviderEventID: eventID, EventType: r.Type})
		if _, err := tx.ExecContext(ctx, "savepoint backfill"); err != nil {
			return err
		}
		// The row lock first, so that what is reported as before is not a concurrent
		// webhook's doing.
		if _, err := p.lock(ctx, w, r.Subscription); err != nil {
			return err
		}
		before, linkedBefore, err := p.canonicalState(ctx, w, r.Subscription, change.CustomerID)
		if err != nil {
			return err
		}
		change.Before = before
		_, err = p.apply(ctx, w, r, eventID)
		change.NewerEvent = w.stale
		var invalid *billing.Invalid
		var unresolved *billing.Unresolved
		if errors.As(err, &unresolved) || errors.As(err, &invalid) {
			if _, err := tx.ExecContext(ctx, "rollback to savepoint backfill"); err != nil {
				return err
			}
			change.Outcome, change.Reason, change.After = BackfillUnresolved, err.Error(), change.Before
			w.changed, w.user = nil, ""
			return nil
		}
		if err != nil {
			return err
		}
		after, linkedAfter, err := p.canonicalState(ctx, w, r.Subscription, change.CustomerID)
		if err != nil {
			return err
		}
		change.After = after
		if linkedBefore == "" && linkedAfter != "" {
			change.LinkedUser = linkedAfter
		}
		change.Outcome = backfillOutcome(change)
		if dryRun {
			return errDryRun
		}
		return nil
	})
	if errors.Is(err, errDryRun) {
		return change, nil
	}
	if err == nil {
		p.committed(ctx, []string{w.user}, w.changed)
	}
	return change, err
}

func backfillOutcome(change BackfillChange) string {
	switch {
	case change.Before == nil && change.After != nil:
		return BackfillCreated
	case !reflect.DeepEqual(change.Before, change.After) || change.LinkedUser != "":
		return BackfillUpdated
	}
	return BackfillUnchanged
}

// canonicalState is a subscription's canonical row (nil: none) and the user its provider
// customer is linked to ("" if none).
func (p *Pipeline) canonicalState(ctx context.Context, w *work, subscriptionID, customerID string) (*SubscriptionState, string, error) {
	var state *SubscriptionState
	row, err := w.GetCanonicalSubscription(ctx, dbq.GetCanonicalSubscriptionParams{Provider: w.adapter.Provider(), ProviderSubscriptionID: subscriptionID})
	switch {
	case err == nil:
		state = &SubscriptionState{Status: row.Status, PeriodEnd: timePtr(row.CurrentPeriodEnd), Plan: row.PlanKey, UserID: row.UserID}
	case !errors.Is(err, sql.ErrNoRows):
		return nil, "", err
	}
	if customerID == "" {
		return state, "", nil
	}
	c, err := w.GetCustomerByWebID(ctx, nullString(customerID))
	if errors.Is(err, sql.ErrNoRows) {
		return state, "", nil
	}
	return state, c.UserID, err
}

// ApplyRead applies one subscription just read from provider's API (a buyer back from
// checkout, say) as a backfill of one: in a transaction of its own, after the same
// ordering, so a newer stored webhook still wins.
func (p *Pipeline) ApplyRead(ctx context.Context, provider string, raw json.RawMessage) (BackfillChange, error) {
	a, ok := p.adapters[provider]
	snapshots, ok2 := a.(billing.Snapshotter)
	if !ok || !ok2 {
		return BackfillChange{}, billing.ErrUnknownStore
	}
	var change BackfillChange
	err := p.db.Request(ctx, func(ctx context.Context) error {
		var err error
		change, err = p.backfillSubscription(ctx, a, snapshots, raw, p.now(), false)
		return err
	}, billing.IsAnswer)
	return change, err
}
