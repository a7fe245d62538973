package appstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// ReadSnapshot reads a subscription's status as ReadSubscription gives it — verified
// already, so raw is never anything Apple sent unverified — as the subscription's state
// when Apple signed it, ordered against its notifications like one. read is when it was
// read, which orders it against an earlier read.
func (a *Adapter) ReadSnapshot(raw []byte, read time.Time) (billing.Reading, billing.SnapshotInfo, error) {
	var s SubscriptionStatus
	if err := json.Unmarshal(raw, &s); err != nil {
		return billing.Reading{}, billing.SnapshotInfo{}, fmt.Errorf("an App Store subscription status: %w", err)
	}
	info := billing.SnapshotInfo{Subscription: s.OriginalTransactionID, Customer: s.Transaction.AppAccountToken}
	switch {
	case s.Refused != "":
		return billing.Reading{}, info, errors.New(s.Refused)
	case s.Status == 0:
		return billing.Reading{}, info, ErrUnknownSubscription
	case s.Transaction.OriginalTransactionID != s.OriginalTransactionID:
		return billing.Reading{}, info, errors.New("the status names another subscription's transaction")
	}
	at := time.UnixMilli(max(s.Transaction.SignedDate, s.Renewal.SignedDate)).UTC()
	if at.UnixMilli() <= 0 || at.After(read) {
		at = read
	}
	return billing.Reading{
		Subscription: s.OriginalTransactionID, Type: billing.SnapshotEventType, At: at, ReadAt: read, Snapshot: true,
		Customer: s.Transaction.AppAccountToken, Decoded: &s,
	}, info, nil
}

// fromStatus is the state a status read at at says: 1 active (cancelled once renewal is
// off, trialing in a free trial), 2 expired, 3 in billing retry (past due, not entitled),
// 4 in its grace period (past due, entitled until it ends), 5 revoked (refunded).
func fromStatus(s *SubscriptionStatus, prev state, at time.Time) (state, error) {
	next, live := fromTransaction(s.Transaction, at)
	ended := &at
	if next.Expires != nil && next.Expires.Before(at) {
		ended = next.Expires
	}
	switch s.Status {
	case StatusActive:
		next.Status = live
		if s.Renewal.AutoRenewStatus != nil && *s.Renewal.AutoRenewStatus == 0 {
			next.Status = billing.StatusCancelled
		}
	case StatusExpired:
		next.Status, next.PeriodEnd = billing.StatusExpired, ended
	case StatusBillingRetry:
		next.Status, next.PeriodEnd = billing.StatusPastDue, ended
	case StatusGracePeriod:
		next.Status, next.PeriodEnd = billing.StatusPastDue, &at
		if grace := millis(s.Renewal.GracePeriodExpiresDate); grace != nil {
			next.PeriodEnd = grace
		}
	case StatusRevoked:
		next.Status, next.PeriodEnd, next.Refund = billing.StatusRefunded, &at, prev.taken(next.Expires, live)
		if revoked := millis(s.Transaction.RevocationDate); revoked != nil {
			next.PeriodEnd = revoked
		}
	default:
		return state{}, billing.Invalidf("app store subscription status %d", s.Status)
	}
	if ended := next.Status != live && next.Status != billing.StatusCancelled && s.Status != StatusGracePeriod; ended &&
		prev.Status == next.Status && prev.PeriodEnd != nil && equalTimes(prev.Expires, next.Expires) {
		next.PeriodEnd = prev.PeriodEnd // when it ended is known already, from its notification
	}
	return next, nil
}

func equalTimes(a, b *time.Time) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Equal(*b)
}

// sameRead says whether a status read finds the state already stored, so that a second
// read of an unchanged subscription writes nothing.
func sameRead(r billing.Reading, stored billing.Stored) bool {
	s, ok := r.Decoded.(*SubscriptionStatus)
	if !ok {
		return false
	}
	prev, err := storedState(stored)
	if err != nil {
		return false
	}
	next, err := fromStatus(s, prev, r.At)
	if err != nil {
		return false
	}
	a, _ := json.Marshal(next)
	b, _ := json.Marshal(prev)
	return string(a) == string(b)
}
