package billing

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/outbound"
)

// EntitlementsChanged is the outbound event type of a change of a user's billing answer.
const EntitlementsChanged = "entitlements.changed"

// ChangeCause is the provider event whose processing changed a user's billing answer.
type ChangeCause struct {
	Provider        string `json:"provider"`
	ProviderEventID string `json:"provider_event_id"`
	EventType       string `json:"event_type"`
}

// changeEvent is the body of an entitlements.changed webhook.
type changeEvent struct {
	Type      string     `json:"type"`
	Timestamp string     `json:"timestamp"`
	Data      changeData `json:"data"`
}

// Previous and Current are BillingViews, already encoded to be compared.
type changeData struct {
	UserID   string          `json:"user_id"`
	Previous json.RawMessage `json:"previous"`
	Current  json.RawMessage `json:"current"`
	Cause    ChangeCause     `json:"cause"`
}

// watchesChanges says whether anyone listens for billing changes: only then is each
// write's effect on the user's answer worked out.
func (s *Service) watchesChanges() bool { return s.announce || len(s.onChange) > 0 }

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
func (s *Service) upsertSubscription(ctx context.Context, q *txn, userID string, arg dbq.UpsertSubscriptionParams) error {
	q.user = userID
	if !s.watchesChanges() {
		_, err := q.UpsertSubscription(ctx, arg)
		return err
	}
	now := s.now()
	plans, err := s.planCatalogue(ctx, q)
	if err != nil {
		return err
	}
	rows, usage, err := s.rowsBefore(ctx, q, userID, arg.ProviderSubscriptionID, plans)
	if err != nil {
		return err
	}
	before, after, old := rowsAround(rows, userID, arg, plans)
	if old != nil && old.userID == userID && old.PlanID == arg.PlanID && old.Status == arg.Status && sameTime(old.CurrentPeriodEnd, arg.CurrentPeriodEnd) {
		return nil // the row stands as it would be written (UpsertSubscription's condition)
	}
	payload, changed, err := s.changeOf(ctx, q, userID, before, after, plans, usage, now)
	if err != nil {
		return err
	}
	wrote, err := s.writeRecording(ctx, q, userID, arg, payload, now)
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
	return s.compareAnswers(ctx, q, old.userID, byRecency(slices.Clone(theirs), old.ListUserSubscriptionsRow), theirs, plans, nil, now)
}

// writeRecording writes arg and, if it is written and payload is not nil, records
// payload in the outbox: on Postgres in one statement, where each costs a round trip.
func (s *Service) writeRecording(ctx context.Context, q *txn, userID string, arg dbq.UpsertSubscriptionParams, payload []byte, now time.Time) (bool, error) {
	if payload == nil {
		n, err := q.UpsertSubscription(ctx, arg)
		return n > 0, err
	}
	ev := outbound.NewEvent(userID, EntitlementsChanged, payload, now)
	if s.db.Engine == db.Postgres {
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
func rowsAround(rows []priorRow, userID string, arg dbq.UpsertSubscriptionParams, plans planCatalogue) (before, after []dbq.ListUserSubscriptionsRow, old *priorRow) {
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
	written := plans.row(dbq.ListUserSubscriptionsRow{
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
func (s *Service) upsertCustomer(ctx context.Context, q *txn, userID string, providerSubscriptionID int64, periodEnd sql.NullTime) (dbq.UpsertCustomerRow, error) {
	if providerSubscriptionID == 0 || !s.watchesChanges() || s.db.Engine != db.Postgres {
		return q.UpsertCustomer(ctx, dbq.UpsertCustomerParams{UserID: userID, Now: s.now()})
	}
	read, err := q.UpsertCustomerReadingBefore(ctx, dbq.UpsertCustomerReadingBeforeParams{
		UserID: userID, MonthEnd: monthEnd(s.now()), CurrentPeriodEnd: periodEnd, Now: s.now(),
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
func (q *txn) takeRowsBefore(userID string, providerSubscriptionID int64) *dbq.UpsertCustomerReadingBeforeRow {
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
func (s *Service) rowsBefore(ctx context.Context, q *txn, userID string, providerSubscriptionID int64, plans planCatalogue) ([]priorRow, []dbq.ListUsageInPeriodsRow, error) {
	if read := q.takeRowsBefore(userID, providerSubscriptionID); read != nil {
		return decodeRowsBefore(*read, plans)
	}
	rows, err := q.ListSubscriptionsBeforeChange(ctx, dbq.ListSubscriptionsBeforeChangeParams{UserID: userID, ProviderSubscriptionID: providerSubscriptionID})
	if err != nil {
		return nil, nil, err
	}
	before := make([]priorRow, len(rows))
	for i, r := range rows {
		before[i] = priorRow{plans.row(dbq.ListUserSubscriptionsRow{
			ProviderSubscriptionID: r.ProviderSubscriptionID, Provider: r.Provider, Status: r.Status,
			CurrentPeriodEnd: r.CurrentPeriodEnd, UpdatedAt: r.UpdatedAt, ID: r.ID, PlanID: r.PlanID,
		}), r.UserID}
	}
	return before, nil, nil
}

// decodeRowsBefore gives the rows and usage counters UpsertCustomerReadingBefore read.
func decodeRowsBefore(read dbq.UpsertCustomerReadingBeforeRow, plans planCatalogue) ([]priorRow, []dbq.ListUsageInPeriodsRow, error) {
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
		before[i] = priorRow{plans.row(dbq.ListUserSubscriptionsRow{
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
func (s *Service) compareAnswers(ctx context.Context, q *txn, userID string, before, after []dbq.ListUserSubscriptionsRow, plans planCatalogue, usage []dbq.ListUsageInPeriodsRow, now time.Time) error {
	payload, changed, err := s.changeOf(ctx, q, userID, before, after, plans, usage, now)
	if err != nil || !changed {
		return err
	}
	q.changed = append(q.changed, userID)
	if payload == nil {
		return nil
	}
	return outbound.Record(ctx, q.Queries, userID, EntitlementsChanged, payload, now)
}

// changeOf says whether userID's answer at now from rows before differs from the answer
// from rows after (see compareAnswers) and, if so and changes are announced, gives the
// entitlements.changed event's body.
func (s *Service) changeOf(ctx context.Context, q *txn, userID string, before, after []dbq.ListUserSubscriptionsRow, plans planCatalogue, usage []dbq.ListUsageInPeriodsRow, now time.Time) ([]byte, bool, error) {
	mirrored, err := s.mirrored(ctx, q.Queries, userID)
	if err != nil {
		return nil, false, err
	}
	previous, current, err := viewsOf(ctx, q.Queries,
		positionOf(userID, now, s.subscriptionsOf(before, mirrored), plans),
		positionOf(userID, now, s.subscriptionsOf(after, mirrored), plans), usage)
	if err != nil {
		return nil, false, err
	}
	previousJSON, err := json.Marshal(previous)
	if err != nil {
		return nil, false, err
	}
	currentJSON, err := json.Marshal(current)
	if err != nil {
		return nil, false, err
	}
	if bytes.Equal(previousJSON, currentJSON) {
		return nil, false, nil
	}
	if !s.announce {
		return nil, true, nil
	}
	payload, err := json.Marshal(changeEvent{Type: EntitlementsChanged, Timestamp: now.Format(time.RFC3339), Data: changeData{
		UserID: userID, Previous: previousJSON, Current: currentJSON, Cause: q.cause,
	}})
	return payload, err == nil, err
}

// viewsOf gives the views of two positions of one user. Unless given, the usage counters
// of both periods are read at once, and only when either position has a metered
// entitlement.
func viewsOf(ctx context.Context, q *dbq.Queries, a, b Entitlements, usage []dbq.ListUsageInPeriodsRow) (BillingView, BillingView, error) {
	usedA, usedB := map[string]int64{}, map[string]int64{}
	if a.metered() || b.metered() {
		if usage == nil {
			var err error
			usage, err = q.ListUsageInPeriods(ctx, dbq.ListUsageInPeriodsParams{UserID: a.UserID, PeriodA: a.UsagePeriodEnd(), PeriodB: b.UsagePeriodEnd()})
			if err != nil {
				return BillingView{}, BillingView{}, err
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
	return ViewOf(a, usedA), ViewOf(b, usedB), nil
}
