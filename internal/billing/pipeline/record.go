package pipeline

import (
	"context"
	"database/sql"

	"github.com/tollgate/tollgate/internal/db/dbq"
)

// record is what an event did to the subscription it names, stored with the event so that
// the console's timeline can say so: that subscription's canonical row before the event
// and after it. A side is unset when there was no row (before the first event) or none
// was written (an event that resolved to nobody).
type record struct {
	subscription  string // the provider's id
	rowID         int64  // its provider_subscriptions row
	before, after canonicalRow
	// movedFrom is the user the event moved the subscription away from, if it did.
	movedFrom string
}

// canonicalRow is the part of a canonical row a timeline shows.
type canonicalRow struct {
	set       bool
	planID    int64
	status    string
	periodEnd sql.NullTime
}

// noteBefore records the canonical row of the event's subscription as its row lock found
// it. Only the first lock is the event's own: a replaced subscription is locked after it.
func (w *work) noteBefore(subscription string, ps providerSubscription) {
	if w.record.subscription != "" {
		return
	}
	w.record.subscription, w.record.rowID = subscription, ps.ID
	status := textOf(ps.StatusBefore)
	w.record.before = canonicalRow{set: status != "", planID: intOf(ps.PlanBefore), status: status, periodEnd: ps.PeriodEndBefore}
}

// noteAfter records the canonical row written for providerSubscriptionID, if it is the
// event's own.
func (w *work) noteAfter(providerSubscriptionID int64, arg dbq.UpsertSubscriptionParams) {
	if providerSubscriptionID == w.record.rowID {
		w.record.after = canonicalRow{set: true, planID: arg.PlanID, status: arg.Status, periodEnd: arg.CurrentPeriodEnd}
	}
}

// recordColumns gives the record's columns, with plans named by their keys.
func (p *Pipeline) recordColumns(ctx context.Context, w *work, rec record) (eventColumns, error) {
	cols := eventColumns{subscription: nullString(rec.subscription), movedFrom: nullString(rec.movedFrom)}
	if !rec.before.set && !rec.after.set {
		return cols, nil
	}
	plans, err := p.catalogues.At(ctx, w.Queries, w.plansVersion)
	if err != nil {
		return cols, err
	}
	side := func(c canonicalRow) (sql.NullString, sql.NullString, sql.NullTime) {
		if !c.set {
			return sql.NullString{}, sql.NullString{}, sql.NullTime{}
		}
		return nullString(plans.Plans[c.planID].Key), nullString(c.status), c.periodEnd
	}
	cols.planBefore, cols.statusBefore, cols.periodEndBefore = side(rec.before)
	cols.planAfter, cols.statusAfter, cols.periodEndAfter = side(rec.after)
	return cols, nil
}

// eventColumns are a record's columns of provider_events.
type eventColumns struct {
	subscription             sql.NullString
	planBefore, statusBefore sql.NullString
	periodEndBefore          sql.NullTime
	planAfter, statusAfter   sql.NullString
	periodEndAfter           sql.NullTime
	movedFrom                sql.NullString
}

// storeEvent stores a delivered event with what became of it.
func (p *Pipeline) storeEvent(ctx context.Context, q *dbq.Queries, provider string, ev event, done Processed) error {
	c := done.columns
	return q.RecordProviderEvent(ctx, dbq.RecordProviderEventParams{
		Provider: provider, ProviderEventID: ev.ID, EventType: ev.Type, Payload: ev.body, Now: p.now(),
		ProcessingError: nullString(done.Reason), Outcome: nullString(done.Outcome), UserID: nullString(done.UserID),
		SubscriptionID: c.subscription, PlanBefore: c.planBefore, StatusBefore: c.statusBefore, PeriodEndBefore: c.periodEndBefore,
		PlanAfter: c.planAfter, StatusAfter: c.statusAfter, PeriodEndAfter: c.periodEndAfter, MovedFromUserID: c.movedFrom,
	})
}

// storeOutcome records what a replay made of a stored event.
func (p *Pipeline) storeOutcome(ctx context.Context, q *dbq.Queries, rowID string, done Processed) error {
	c := done.columns
	return q.SetEventOutcome(ctx, dbq.SetEventOutcomeParams{
		ID: rowID, Now: sql.NullTime{Time: p.now(), Valid: true}, ProcessingError: nullString(done.Reason), Outcome: nullString(done.Outcome), UserID: nullString(done.UserID),
		SubscriptionID: c.subscription, PlanBefore: c.planBefore, StatusBefore: c.statusBefore, PeriodEndBefore: c.periodEndBefore,
		PlanAfter: c.planAfter, StatusAfter: c.statusAfter, PeriodEndAfter: c.periodEndAfter, MovedFromUserID: c.movedFrom,
	})
}

// intOf and textOf read a scalar subquery's column, which the drivers give as an
// untyped value (int64, or string or bytes).
func intOf(v any) int64 {
	n, _ := v.(int64)
	return n
}

func textOf(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}
