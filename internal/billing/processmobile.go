package billing

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbq"
)

// mobileRank orders mobile event types that carry the same timestamp: a later stage of a
// subscription's life wins the tie. Only these seven types are handled.
var mobileRank = map[string]int{
	"subscription_started":      1,
	"subscription_renewed":      1,
	"non_subscription_purchase": 1,
	"access_level_updated":      1,
	"subscription_cancelled":    2,
	"subscription_expired":      3,
	"subscription_refunded":     3,
}

// mobileState is what provider_subscriptions.state holds for a mobile subscription: the
// canonical result of the last applied event and the ids needed to materialise it.
type mobileState struct {
	Status         string     `json:"status"`
	PeriodEnd      *time.Time `json:"period_end"`
	ProductID      string     `json:"product_id"`
	CustomerUserID string     `json:"customer_user_id"`
}

func (s *Service) processMobile(ctx context.Context, q *txn, eventID string, body []byte) (string, error) {
	ev, at, err := decodeMobileEvent(body)
	if err != nil {
		return "", err
	}
	eventType := ev.EventType
	if handled, ok := s.mobileAliases[eventType]; ok {
		eventType = handled
	}
	if _, ok := mobileRank[eventType]; !ok {
		s.log.InfoContext(ctx, "webhook event type ignored", "provider", ProviderMobile, "event_id", eventID, "event_type", ev.EventType)
		return outcomeIgnored, nil
	}
	key := ev.subscriptionKey()
	if key == "" {
		return "", permanent("mobile event has no transaction or profile id")
	}
	ps, err := q.LockProviderSubscription(ctx, dbq.LockProviderSubscriptionParams{Provider: ProviderMobile, ProviderSubscriptionID: key, Now: s.now()})
	if err != nil {
		return "", err
	}
	var current mobileState
	if ps.LastEventID.Valid {
		if err := json.Unmarshal([]byte(ps.State), &current); err != nil {
			return "", err
		}
	}

	outcome := outcomeApplied
	switch {
	case ps.LastEventID.String == eventID:
		outcome = outcomeDuplicate
	case !mobileSupersedes(eventType, at, ps):
		outcome = outcomeStale
	default:
		next, err := mobileCanonical(eventType, ev, at, current)
		if err != nil {
			return "", err
		}
		state, err := json.Marshal(next)
		if err != nil {
			return "", err
		}
		ps.State = string(state)
		ps.ProviderCustomerID = nullString(ev.ProfileID)
		ps.LastEventID, ps.LastEventType, ps.LastEventAt = nullString(eventID), nullString(eventType), nullTime(&at)
		if err := s.saveProviderSubscription(ctx, q, ps); err != nil {
			return "", err
		}
		current = next
	}
	if !ps.LastEventID.Valid {
		return outcome, nil
	}
	return s.materialiseMobile(ctx, q, ps, current, outcome)
}

// mobileSupersedes: later events win; at the same instant the later stage of life wins,
// and between equals the later arrival.
func mobileSupersedes(eventType string, at time.Time, ps providerSubscription) bool {
	switch {
	case !ps.LastEventID.Valid, at.After(ps.LastEventAt.Time):
		return true
	case at.Before(ps.LastEventAt.Time):
		return false
	}
	return mobileRank[eventType] >= mobileRank[ps.LastEventType.String]
}

// mobileCanonical maps one mobile event onto the subscription's state (docs/billing.md,
// "Status mapping").
func mobileCanonical(eventType string, ev mobileEvent, at time.Time, current mobileState) (mobileState, error) {
	p := ev.EventProperties
	next := current
	if p.VendorProductID != "" {
		next.ProductID = p.VendorProductID
	}
	if ev.CustomerUserID != nil && *ev.CustomerUserID != "" {
		next.CustomerUserID = *ev.CustomerUserID
	}
	subscriptionExpires, err := optionalMobileTime("subscription_expires_at", p.SubscriptionExpiresAt)
	if err != nil {
		return next, err
	}
	expires, err := optionalMobileTime("expires_at", p.ExpiresAt)
	if err != nil {
		return next, err
	}
	switch eventType {
	case "subscription_started", "subscription_renewed":
		next.Status, next.PeriodEnd = StatusActive, subscriptionExpires
	case "subscription_cancelled":
		next.Status = StatusCancelled
		if subscriptionExpires != nil {
			next.PeriodEnd = subscriptionExpires
		}
	case "subscription_expired":
		next.Status, next.PeriodEnd = StatusExpired, &at
	case "subscription_refunded":
		next.Status, next.PeriodEnd = StatusRefunded, &at
	case "non_subscription_purchase":
		next.Status, next.PeriodEnd = StatusActive, firstTime(expires, subscriptionExpires)
		if p.IsLifetime != nil && *p.IsLifetime {
			next.PeriodEnd = nil
		}
	case "access_level_updated":
		next.PeriodEnd = firstTime(expires, subscriptionExpires)
		switch {
		case isTrue(p.IsRefund):
			next.Status = StatusRefunded
		case p.IsActive != nil && !*p.IsActive:
			next.Status = StatusExpired
		case isTrue(p.IsInGracePeriod):
			next.Status = StatusPastDue
		case p.WillRenew != nil && !*p.WillRenew:
			next.Status = StatusCancelled
		default:
			next.Status = StatusActive
		}
		if isTrue(p.IsLifetime) {
			next.PeriodEnd = nil
		}
	}
	if (next.Status == StatusExpired || next.Status == StatusRefunded) && next.PeriodEnd == nil {
		next.PeriodEnd = &at
	}
	return next, nil
}

func (s *Service) materialiseMobile(ctx context.Context, q *txn, ps providerSubscription, state mobileState, outcome string) (string, error) {
	if !isUUID(state.CustomerUserID) {
		return "", unresolved("unresolved mobile customer", "customer_user_id", state.CustomerUserID, "profile_id", ps.ProviderCustomerID.String)
	}
	plan, err := s.resolvePlan(ctx, q, ProviderMobile, []string{state.ProductID})
	if err != nil {
		return "", err
	}
	periodEnd := nullTime(state.PeriodEnd)
	c, err := s.upsertCustomer(ctx, q, state.CustomerUserID, ps.ID, periodEnd)
	if err != nil {
		return "", err
	}
	return outcome, s.upsertSubscription(ctx, q, state.CustomerUserID, dbq.UpsertSubscriptionParams{
		ProviderSubscriptionID: ps.ID, BillingCustomerID: c.ID, PlanID: plan, Provider: ProviderMobile,
		Status: state.Status, CurrentPeriodEnd: periodEnd, Now: s.now(),
	})
}
