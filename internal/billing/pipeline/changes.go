package pipeline

import (
	"context"
	"database/sql"
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	catalogue "github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/outbound"
)

// watchesChanges says whether anyone listens for billing changes: only then is each
// write's effect on the user's answer worked out.
func (p *Pipeline) watchesChanges() bool { return p.announce || len(p.onChange) > 0 }

// upsertSubscription writes a canonical row. While changes are watched it also compares
// the billing answer of the row's user (and of its former user, if the row moved) before
// and after the write, in the same transaction: an answer that moved is recorded in the
// outbox, and its user told to the hooks once the transaction commits. A write that leaves
// every answer as it was, such as a replay, is no change.
//
// The rows are read once, before the write, and the answers compared before it: the rows
// after it are those with the written one in its new form, placed by recency (it was
// written now). The caller holds the provider subscription's row lock, which every writer
// of its canonical row takes first, so that row stays as read until the write. So a write
// that would change nothing is not made, and on Postgres a change's outbox row is inserted
// by the write's statement. The read rides with the customer's upsert just before, when
// there is one (upsertCustomer); with the plan catalogue from memory, watching changes then
// costs ingestion no statement of its own.
func (p *Pipeline) upsertSubscription(ctx context.Context, q *work, userID string, arg dbq.UpsertSubscriptionParams) error {
	q.user = userID
	if !p.watchesChanges() {
		_, err := q.UpsertSubscription(ctx, arg)
		return err
	}
	now := p.now()
	plans, err := p.catalogues.At(ctx, q.Queries, q.plansVersion)
	if err != nil {
		return err
	}
	rows, usage, err := p.rowsBefore(ctx, q, userID, arg.ProviderSubscriptionID, plans)
	if err != nil {
		return err
	}
	before, after, old := rowsAround(rows, userID, arg, plans)
	if old != nil && old.userID == userID && old.PlanID == arg.PlanID && old.Status == arg.Status && sameTime(old.CurrentPeriodEnd, arg.CurrentPeriodEnd) {
		return nil // the row stands as it would be written (UpsertSubscription's condition)
	}
	previousAt := now
	if !q.answerBefore.IsZero() && q.answerBefore.Before(now) {
		previousAt = q.answerBefore
	}
	payload, changed, err := p.changeOf(ctx, q, userID, before, after, plans, usage, previousAt, now)
	if err != nil {
		return err
	}
	wrote, err := p.writeRecording(ctx, q, userID, arg, payload, now)
	// A period end finer than the database keeps can look like a change here and be none
	// there: only a written row is one.
	if err != nil || !wrote {
		return err
	}
	if changed {
		q.changed = append(q.changed, userID)
	}
	if old == nil || old.userID == userID {
		return nil
	}
	// The row moved from another user (a customer linked anew): theirs may change too.
	theirs, err := q.ListUserSubscriptions(ctx, old.userID)
	if err != nil {
		return err
	}
	return p.compareAnswers(ctx, q, old.userID, byRecency(slices.Clone(theirs), old.ListUserSubscriptionsRow), theirs, plans, nil, now)
}

// writeRecording writes arg and, if it is written and payload is not nil, records
// payload in the outbox: on Postgres in one statement, where each costs a round trip.
func (p *Pipeline) writeRecording(ctx context.Context, q *work, userID string, arg dbq.UpsertSubscriptionParams, payload []byte, now time.Time) (bool, error) {
	if payload == nil {
		n, err := q.UpsertSubscription(ctx, arg)
		return n > 0, err
	}
	ev := outbound.NewEvent(userID, billing.EntitlementsChanged, payload, now)
	if p.db.Engine == db.Postgres {
		n, err := q.UpsertSubscriptionRecordingChange(ctx, dbq.UpsertSubscriptionRecordingChangeParams{
			MessageID: ev.MessageID, UserID: ev.UserID, EventType: ev.EventType, Payload: ev.Payload, GiveUpAt: ev.GiveUpAt,
			ProviderSubscriptionID: arg.ProviderSubscriptionID, BillingCustomerID: arg.BillingCustomerID, PlanID: arg.PlanID,
			Provider: arg.Provider, Status: arg.Status, CurrentPeriodEnd: arg.CurrentPeriodEnd, Now: arg.Now,
		})
		return n > 0, err
	}
	n, err := q.UpsertSubscription(ctx, arg)
	if err != nil || n == 0 {
		return false, err
	}
	return true, q.InsertOutboundEvent(ctx, ev)
}

// rowsAround gives userID's canonical rows before the write of arg, from rows as
// rowsBefore gives them, and after it, and the written row's former self (nil if it is
// new), whoever's it was.
func rowsAround(rows []priorRow, userID string, arg dbq.UpsertSubscriptionParams, plans billing.Catalogue) (before, after []dbq.ListUserSubscriptionsRow, old *priorRow) {
	for _, r := range rows {
		if r.ProviderSubscriptionID == arg.ProviderSubscriptionID {
			old = &r
		}
		if r.userID != userID {
			continue
		}
		before = append(before, r.ListUserSubscriptionsRow)
		if r.ProviderSubscriptionID != arg.ProviderSubscriptionID {
			after = append(after, r.ListUserSubscriptionsRow)
		}
	}
	written := catalogue.WithPlan(plans, dbq.ListUserSubscriptionsRow{
		ProviderSubscriptionID: arg.ProviderSubscriptionID, Provider: arg.Provider, Status: arg.Status,
		CurrentPeriodEnd: arg.CurrentPeriodEnd, UpdatedAt: arg.Now, ID: math.MaxInt64, PlanID: arg.PlanID,
	})
	if old != nil {
		written.ID = old.ID
	}
	return before, byRecency(after, written), old
}

// upsertCustomer writes userID's billing customer just before the canonical write of
// providerSubscriptionID (0: none follows), to end at periodEnd, whose provider
// subscription's row lock the caller holds. On Postgres, while changes are watched, its
// statement also reads the rows before that write (UpsertCustomerReadingBefore), for
// upsertSubscription: a read that costs no round trip of its own.
func (p *Pipeline) upsertCustomer(ctx context.Context, q *work, userID string, providerSubscriptionID int64, periodEnd sql.NullTime) (dbq.UpsertCustomerRow, error) {
	if providerSubscriptionID == 0 || !p.watchesChanges() || p.db.Engine != db.Postgres {
		return q.UpsertCustomer(ctx, dbq.UpsertCustomerParams{UserID: userID, Now: p.now()})
	}
	read, err := q.UpsertCustomerReadingBefore(ctx, dbq.UpsertCustomerReadingBeforeParams{
		UserID: userID, MonthEnd: billing.MonthEnd(p.now()), CurrentPeriodEnd: periodEnd, Now: p.now(),
		ProviderSubscriptionID: providerSubscriptionID,
	})
	if err != nil {
		return dbq.UpsertCustomerRow{}, err
	}
	q.customerRead = &customerRead{userID: userID, providerSubscriptionID: providerSubscriptionID, read: read}
	return dbq.UpsertCustomerRow{ID: read.ID, WebCustomerID: read.WebCustomerID}, nil
}

// customerRead is what upsertCustomer read for the canonical write to follow, and for whom.
type customerRead struct {
	userID                 string
	providerSubscriptionID int64
	read                   dbq.UpsertCustomerReadingBeforeRow
}

// takeRowsBefore gives, once, what upsertCustomer read for userID's write of
// providerSubscriptionID, or nil.
func (q *work) takeRowsBefore(userID string, providerSubscriptionID int64) *dbq.UpsertCustomerReadingBeforeRow {
	b := q.customerRead
	q.customerRead = nil
	if b == nil || b.userID != userID || b.providerSubscriptionID != providerSubscriptionID {
		return nil
	}
	return &b.read
}

// rowsBefore gives the rows of userID, and the row of providerSubscriptionID whoever's it
// is, with their users, as they are before its write, newest first, and the usage counters
// both sides of the change may show, or nil for them to be read when needed. On Postgres
// they usually come with the customer's upsert (upsertCustomer); else they are read.
func (p *Pipeline) rowsBefore(ctx context.Context, q *work, userID string, providerSubscriptionID int64, plans billing.Catalogue) ([]priorRow, []dbq.ListUsageInPeriodsRow, error) {
	if read := q.takeRowsBefore(userID, providerSubscriptionID); read != nil {
		return decodeRowsBefore(*read, plans)
	}
	rows, err := q.ListSubscriptionsBeforeChange(ctx, dbq.ListSubscriptionsBeforeChangeParams{UserID: userID, ProviderSubscriptionID: providerSubscriptionID})
	if err != nil {
		return nil, nil, err
	}
	before := make([]priorRow, len(rows))
	for i, r := range rows {
		before[i] = priorRow{catalogue.WithPlan(plans, dbq.ListUserSubscriptionsRow{
			ProviderSubscriptionID: r.ProviderSubscriptionID, Provider: r.Provider, Status: r.Status,
			CurrentPeriodEnd: r.CurrentPeriodEnd, UpdatedAt: r.UpdatedAt, ID: r.ID, PlanID: r.PlanID,
		}), r.UserID}
	}
	return before, nil, nil
}

// decodeRowsBefore gives the rows and usage counters UpsertCustomerReadingBefore read.
func decodeRowsBefore(read dbq.UpsertCustomerReadingBeforeRow, plans billing.Catalogue) ([]priorRow, []dbq.ListUsageInPeriodsRow, error) {
	var rows []struct {
		ProviderSubscriptionID, ID, PlanID int64
		Provider, Status, UserID           string
		CurrentPeriodEnd                   *time.Time
		UpdatedAt                          time.Time
	}
	if err := json.Unmarshal([]byte(read.Subscriptions), &rows); err != nil {
		return nil, nil, err
	}
	before := make([]priorRow, len(rows))
	for i, r := range rows {
		before[i] = priorRow{catalogue.WithPlan(plans, dbq.ListUserSubscriptionsRow{
			ProviderSubscriptionID: r.ProviderSubscriptionID, Provider: r.Provider, Status: r.Status,
			CurrentPeriodEnd: nullTime(r.CurrentPeriodEnd), UpdatedAt: r.UpdatedAt, ID: r.ID, PlanID: r.PlanID,
		}), r.UserID}
	}
	usage := []dbq.ListUsageInPeriodsRow{}
	if err := json.Unmarshal([]byte(read.Usage), &usage); err != nil {
		return nil, nil, err
	}
	return before, usage, nil
}

// sameTime says whether two nullable times are the same instant, or both null.
func sameTime(a, b sql.NullTime) bool {
	return a.Valid == b.Valid && (!a.Valid || a.Time.Equal(b.Time))
}

// priorRow is a canonical row as it was before a write, and its user.
type priorRow struct {
	dbq.ListUserSubscriptionsRow
	userID string
}

// byRecency inserts row into rows where the query's order (newest first, then the
// higher id) puts it.
func byRecency(rows []dbq.ListUserSubscriptionsRow, row dbq.ListUserSubscriptionsRow) []dbq.ListUserSubscriptionsRow {
	at := slices.IndexFunc(rows, func(r dbq.ListUserSubscriptionsRow) bool {
		return r.UpdatedAt.Before(row.UpdatedAt) || (r.UpdatedAt.Equal(row.UpdatedAt) && r.ID < row.ID)
	})
	if at < 0 {
		at = len(rows)
	}
	return slices.Insert(rows, at, row)
}

// compareAnswers records a change when userID's answer at now from rows before differs
// from the answer from rows after. usage holds the counters both may show, or is nil for
// them to be read.
func (p *Pipeline) compareAnswers(ctx context.Context, q *work, userID string, before, after []dbq.ListUserSubscriptionsRow, plans billing.Catalogue, usage []dbq.ListUsageInPeriodsRow, now time.Time) error {
	payload, changed, err := p.changeOf(ctx, q, userID, before, after, plans, usage, now, now)
	if err != nil || !changed {
		return err
	}
	q.changed = append(q.changed, userID)
	if payload == nil {
		return nil
	}
	return outbound.Record(ctx, q.Queries, userID, billing.EntitlementsChanged, payload, now)
}

// changeOf says whether userID's answer at previousAt from rows before differs from the
// answer at now from rows after (see compareAnswers) and, if so and changes are
// announced, gives the entitlements.changed event's body. previousAt is now but for an
// end recorded after it passed (Reading.AnswerBefore).
func (p *Pipeline) changeOf(ctx context.Context, q *work, userID string, before, after []dbq.ListUserSubscriptionsRow, plans billing.Catalogue, usage []dbq.ListUsageInPeriodsRow, previousAt, now time.Time) ([]byte, bool, error) {
	var mirrored []billing.Subscription
	if p.mirror != nil {
		var err error
		if mirrored, err = p.mirror.Subscriptions(ctx, q.Queries, userID, now); err != nil {
			return nil, false, err
		}
	}
	on := p.mirror != nil
	previous, current, err := viewsOf(ctx, q.Queries,
		billing.Position(userID, previousAt, catalogue.Subscriptions(before, mirrored, on), plans),
		billing.Position(userID, now, catalogue.Subscriptions(after, mirrored, on), plans), usage)
	if err != nil {
		return nil, false, err
	}
	change, changed, err := billing.Compare(userID, previous, current)
	if err != nil || !changed {
		return nil, false, err
	}
	if !p.announce {
		return nil, true, nil
	}
	payload, err := change.Body(q.cause, now)
	return payload, err == nil, err
}

// viewsOf gives the views of two positions of one user. Unless given, the usage counters
// of both periods are read at once, and only when either position has a metered
// entitlement.
func viewsOf(ctx context.Context, q *dbq.Queries, a, b billing.Entitlements, usage []dbq.ListUsageInPeriodsRow) (billing.BillingView, billing.BillingView, error) {
	usedA, usedB := map[string]int64{}, map[string]int64{}
	if a.Metered() || b.Metered() {
		if usage == nil {
			var err error
			usage, err = q.ListUsageInPeriods(ctx, dbq.ListUsageInPeriodsParams{UserID: a.UserID, PeriodA: a.UsagePeriodEnd(), PeriodB: b.UsagePeriodEnd()})
			if err != nil {
				return billing.BillingView{}, billing.BillingView{}, err
			}
		}
		for _, r := range usage {
			if r.PeriodEnd.Equal(a.UsagePeriodEnd()) {
				usedA[r.Name] = r.Used
			}
			if r.PeriodEnd.Equal(b.UsagePeriodEnd()) {
				usedB[r.Name] = r.Used
			}
		}
	}
	return billing.ViewOf(a, usedA), billing.ViewOf(b, usedB), nil
}
