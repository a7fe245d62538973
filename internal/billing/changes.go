package billing

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"

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

type changeData struct {
	UserID   string      `json:"user_id"`
	Previous BillingView `json:"previous"`
	Current  BillingView `json:"current"`
	Cause    ChangeCause `json:"cause"`
}

// watchesChanges says whether anyone listens for billing changes: only then is each
// write's effect on the user's answer worked out.
func (s *Service) watchesChanges() bool { return s.announce || len(s.onChange) > 0 }

// upsertSubscription writes a canonical row. While changes are watched it also compares
// the billing answer of the row's user (and of its former user, if the row moved) before
// and after the write, in the same transaction: an answer that moved is recorded in the
// outbox, and its user told to the hooks once the transaction commits. A write that leaves
// every answer as it was, such as a replay, is no change.
func (s *Service) upsertSubscription(ctx context.Context, q *txn, userID string, arg dbq.UpsertSubscriptionParams) error {
	q.user = userID
	if !s.watchesChanges() {
		n, err := q.UpsertSubscription(ctx, arg)
		if err == nil && n > 0 {
			q.changed = append(q.changed, userID)
		}
		return err
	}
	before, err := q.GetSubscriptionBeforeChange(ctx, arg.ProviderSubscriptionID)
	existed := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	n, err := q.UpsertSubscription(ctx, arg)
	if err != nil || n == 0 {
		return err
	}
	plans, err := loadPlanCatalogue(ctx, q.Queries)
	if err != nil {
		return err
	}
	users := []string{userID}
	if existed && before.UserID != userID {
		users = append(users, before.UserID)
	}
	for _, user := range users {
		var old *dbq.GetSubscriptionBeforeChangeRow
		if existed && before.UserID == user {
			old = &before
		}
		if err := s.compareAnswers(ctx, q, user, arg.ProviderSubscriptionID, old, plans); err != nil {
			return err
		}
	}
	return nil
}

// compareAnswers works out userID's answer after the write and, from the same rows with
// the written one as it was (old, or absent), before it.
func (s *Service) compareAnswers(ctx context.Context, q *txn, userID string, written int64, old *dbq.GetSubscriptionBeforeChangeRow, plans planCatalogue) error {
	rows, err := q.ListUserSubscriptions(ctx, userID)
	if err != nil {
		return err
	}
	now := s.now()
	var positions [2]Entitlements
	for i, rows := range [][]dbq.ListUserSubscriptionsRow{rowsBefore(rows, written, old), rows} {
		subs, err := s.subscriptionsOf(ctx, q.Queries, userID, rows)
		if err != nil {
			return err
		}
		positions[i] = positionOf(userID, now, subs, plans)
	}
	previous, current, err := viewsOf(ctx, q.Queries, positions[0], positions[1])
	if err != nil {
		return err
	}
	event := changeEvent{Type: EntitlementsChanged, Timestamp: now.Format(time.RFC3339), Data: changeData{
		UserID: userID, Previous: previous, Current: current, Cause: q.cause,
	}}
	before, err := json.Marshal(event.Data.Previous)
	if err != nil {
		return err
	}
	after, err := json.Marshal(event.Data.Current)
	if err != nil {
		return err
	}
	if bytes.Equal(before, after) {
		return nil
	}
	q.changed = append(q.changed, userID)
	if !s.announce {
		return nil
	}
	payload, err := json.Marshal(event)
	if err != nil {
		return err
	}
	return outbound.Record(ctx, q.Queries, userID, EntitlementsChanged, payload, now)
}

// rowsBefore is a user's rows as they stood before the row of provider subscription
// written was written: without it, or with its old version in its place by recency.
func rowsBefore(rows []dbq.ListUserSubscriptionsRow, written int64, old *dbq.GetSubscriptionBeforeChangeRow) []dbq.ListUserSubscriptionsRow {
	before := slices.DeleteFunc(slices.Clone(rows), func(r dbq.ListUserSubscriptionsRow) bool { return r.ProviderSubscriptionID == written })
	if old == nil {
		return before
	}
	at := slices.IndexFunc(before, func(r dbq.ListUserSubscriptionsRow) bool { return r.UpdatedAt.Before(old.UpdatedAt) })
	if at < 0 {
		at = len(before)
	}
	return slices.Insert(before, at, dbq.ListUserSubscriptionsRow{
		ProviderSubscriptionID: old.ProviderSubscriptionID, Provider: old.Provider, Status: old.Status,
		CurrentPeriodEnd: old.CurrentPeriodEnd, UpdatedAt: old.UpdatedAt,
		PlanID: old.PlanID, PlanKey: old.PlanKey, PlanName: old.PlanName, PlanTier: old.PlanTier,
	})
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
