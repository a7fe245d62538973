package billing

import (
	"bytes"
	"context"
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
// The rows are read once, before the write; the rows after it are those with the written
// one in its new form, placed by recency (it was written now). With the plan catalogue
// from memory, on Postgres a change costs ingestion no round trip of its own: the read
// rides with the write, the outbox row with the event's processed mark. Only a metered
// plan's usage counters take one.
func (s *Service) upsertSubscription(ctx context.Context, q *txn, userID string, arg dbq.UpsertSubscriptionParams) error {
	q.user = userID
	if !s.watchesChanges() {
		_, err := q.UpsertSubscription(ctx, arg)
		return err
	}
	rows, wrote, err := s.upsertReadingBefore(ctx, q, userID, arg)
	if err != nil || !wrote {
		return err
	}
	plans, err := s.planCatalogue(ctx, q)
	if err != nil {
		return err
	}
	var before, after []dbq.ListUserSubscriptionsRow
	var old *dbq.ListSubscriptionsBeforeChangeRow
	for _, r := range rows {
		if r.ProviderSubscriptionID == arg.ProviderSubscriptionID {
			old = &r
		}
		if r.UserID != userID {
			continue
		}
		before = append(before, userRow(r))
		if r.ProviderSubscriptionID != arg.ProviderSubscriptionID {
			after = append(after, userRow(r))
		}
	}
	written := dbq.ListUserSubscriptionsRow{
		ProviderSubscriptionID: arg.ProviderSubscriptionID, Provider: arg.Provider, Status: arg.Status,
		CurrentPeriodEnd: arg.CurrentPeriodEnd, UpdatedAt: arg.Now, ID: math.MaxInt64, PlanID: arg.PlanID,
	}
	if old != nil {
		written.ID = old.ID
	}
	if p, ok := plans.plans[arg.PlanID]; ok {
		written.PlanKey, written.PlanName, written.PlanTier = p.Key, p.Name, p.tier
	}
	after = byRecency(after, written)
	if err := s.compareAnswers(ctx, q, userID, before, after, plans); err != nil {
		return err
	}
	if old == nil || old.UserID == userID {
		return nil
	}
	// The row moved from another user (a customer linked anew): theirs may change too.
	theirs, err := q.ListUserSubscriptions(ctx, old.UserID)
	if err != nil {
		return err
	}
	return s.compareAnswers(ctx, q, old.UserID, byRecency(slices.Clone(theirs), userRow(*old)), theirs, plans)
}

// upsertReadingBefore writes a canonical row and gives the rows of its user, and its own
// former row, as they were before: in one statement on Postgres, where each costs a round
// trip; in two on SQLite, where none does. written says whether the row changed.
func (s *Service) upsertReadingBefore(ctx context.Context, q *txn, userID string, arg dbq.UpsertSubscriptionParams) ([]dbq.ListSubscriptionsBeforeChangeRow, bool, error) {
	if s.db.Engine == db.Postgres {
		rows, err := q.UpsertSubscriptionReadingBefore(ctx, dbq.UpsertSubscriptionReadingBeforeParams{
			UserID: userID, ProviderSubscriptionID: arg.ProviderSubscriptionID, BillingCustomerID: arg.BillingCustomerID,
			PlanID: arg.PlanID, Provider: arg.Provider, Status: arg.Status, CurrentPeriodEnd: arg.CurrentPeriodEnd, Now: arg.Now,
		})
		before := make([]dbq.ListSubscriptionsBeforeChangeRow, len(rows))
		written := true // no rows: the subscription is new
		for i, r := range rows {
			before[i] = dbq.ListSubscriptionsBeforeChangeRow{
				ProviderSubscriptionID: r.ProviderSubscriptionID, Provider: r.Provider, Status: r.Status,
				CurrentPeriodEnd: r.CurrentPeriodEnd, UpdatedAt: r.UpdatedAt, ID: r.ID,
				PlanID: r.PlanID, PlanKey: r.PlanKey, PlanName: r.PlanName, PlanTier: r.PlanTier, UserID: r.UserID,
			}
			written = r.Written > 0
		}
		return before, written, err
	}
	rows, err := q.ListSubscriptionsBeforeChange(ctx, dbq.ListSubscriptionsBeforeChangeParams{UserID: userID, ProviderSubscriptionID: arg.ProviderSubscriptionID})
	if err != nil {
		return nil, false, err
	}
	n, err := q.UpsertSubscription(ctx, arg)
	return rows, n > 0, err
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

func userRow(r dbq.ListSubscriptionsBeforeChangeRow) dbq.ListUserSubscriptionsRow {
	return dbq.ListUserSubscriptionsRow{
		ProviderSubscriptionID: r.ProviderSubscriptionID, Provider: r.Provider, Status: r.Status,
		CurrentPeriodEnd: r.CurrentPeriodEnd, UpdatedAt: r.UpdatedAt, ID: r.ID,
		PlanID: r.PlanID, PlanKey: r.PlanKey, PlanName: r.PlanName, PlanTier: r.PlanTier,
	}
}

// compareAnswers records a change when userID's answer from rows before differs from the
// answer from rows after.
func (s *Service) compareAnswers(ctx context.Context, q *txn, userID string, before, after []dbq.ListUserSubscriptionsRow, plans planCatalogue) error {
	mirrored, err := s.mirrored(ctx, q.Queries, userID)
	if err != nil {
		return err
	}
	now := s.now()
	previous, current, err := viewsOf(ctx, q.Queries,
		positionOf(userID, now, s.subscriptionsOf(before, mirrored), plans),
		positionOf(userID, now, s.subscriptionsOf(after, mirrored), plans))
	if err != nil {
		return err
	}
	previousJSON, err := json.Marshal(previous)
	if err != nil {
		return err
	}
	currentJSON, err := json.Marshal(current)
	if err != nil {
		return err
	}
	if bytes.Equal(previousJSON, currentJSON) {
		return nil
	}
	q.changed = append(q.changed, userID)
	if !s.announce {
		return nil
	}
	payload, err := json.Marshal(changeEvent{Type: EntitlementsChanged, Timestamp: now.Format(time.RFC3339), Data: changeData{
		UserID: userID, Previous: previousJSON, Current: currentJSON, Cause: q.cause,
	}})
	if err != nil {
		return err
	}
	q.outbox = append(q.outbox, outbound.NewDelivery(userID, EntitlementsChanged, payload, now))
	return nil
}

// recordChanges adds the transaction's outbound events to the outbox.
func (q *txn) recordChanges(ctx context.Context) error {
	for _, d := range q.outbox {
		if err := q.InsertOutboundDelivery(ctx, d); err != nil {
			return err
		}
	}
	q.outbox = nil
	return nil
}

// markProcessed marks the event processed and records the outbound events of the changes
// it made. On Postgres one event (the usual case) rides with the mark: a round trip fewer.
func (s *Service) markProcessed(ctx context.Context, q *txn, arg dbq.MarkEventProcessedParams) error {
	if s.db.Engine != db.Postgres || len(q.outbox) != 1 {
		if err := q.recordChanges(ctx); err != nil {
			return err
		}
		return q.MarkEventProcessed(ctx, arg)
	}
	d := q.outbox[0]
	q.outbox = nil
	return q.MarkEventProcessedRecording(ctx, dbq.MarkEventProcessedRecordingParams{
		ID: arg.ID, ProcessedAt: arg.ProcessedAt, ProcessingError: arg.ProcessingError,
		MessageID: d.MessageID, UserID: d.UserID, EventType: d.EventType, Payload: d.Payload, Now: d.Now, GiveUpAt: d.GiveUpAt,
	})
}

// planCatalogue is the plan catalogue at the version q's transaction read: from memory
// while that version stands, else read again (and kept).
func (s *Service) planCatalogue(ctx context.Context, q *txn) (planCatalogue, error) {
	if c := s.plans.Load(); c != nil && q.plansVersion != 0 && c.version == q.plansVersion {
		return c.catalogue, nil
	}
	plans, err := loadPlanCatalogue(ctx, q.Queries)
	if err == nil && q.plansVersion != 0 {
		s.plans.Store(&versionedCatalogue{version: q.plansVersion, catalogue: plans})
	}
	return plans, err
}

// versionedCatalogue is a plan catalogue and the plans_version it was read at.
type versionedCatalogue struct {
	version   int64
	catalogue planCatalogue
}

// viewsOf gives the views of two positions of one user, reading the usage counters of both
// periods at once, and only when either position has a metered entitlement.
func viewsOf(ctx context.Context, q *dbq.Queries, a, b Entitlements) (BillingView, BillingView, error) {
	usedA, usedB := map[string]int64{}, map[string]int64{}
	if a.metered() || b.metered() {
		rows, err := q.ListUsageInPeriods(ctx, dbq.ListUsageInPeriodsParams{UserID: a.UserID, PeriodA: a.UsagePeriodEnd(), PeriodB: b.UsagePeriodEnd()})
		if err != nil {
			return BillingView{}, BillingView{}, err
		}
		for _, r := range rows {
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
