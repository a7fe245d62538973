package adapty

// The mobile provider's rules: which event supersedes which, and what each does to a
// subscription's state.

import (
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
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
	// Amount is the last price paid, in the currency's minor unit, when events say.
	Amount   int64  `json:"amount,omitempty"`
	Currency string `json:"currency,omitempty"`
	// Period is the billing period the last purchase paid for, from its dates.
	Period string `json:"period,omitempty"`
}

// supersedes: later events win; at the same instant the later stage of life wins,
// and between equals the later arrival.
func supersedes(eventType string, at time.Time, stored billing.Stored) billing.Order {
	if o, decided := billing.ByTime(at, stored); decided {
		return o
	}
	if mobileRank[eventType] >= mobileRank[stored.LastEventType] {
		return billing.Supersedes
	}
	return billing.Stale
}

// canonical maps one mobile event onto the subscription's state (docs/billing.md,
// "Status mapping").
func canonical(eventType string, ev mobileEvent, at time.Time, current mobileState) (mobileState, error) {
	p := ev.EventProperties
	next := current
	if p.VendorProductID != "" {
		next.ProductID = p.VendorProductID
	}
	if ev.CustomerUserID != nil && *ev.CustomerUserID != "" {
		next.CustomerUserID = *ev.CustomerUserID
	}
	if amount, ok := billing.MinorUnits(p.PriceLocal, p.Currency); ok {
		next.Amount, next.Currency = amount, strings.ToLower(p.Currency)
	}
	subscriptionExpires, err := optionalMobileTime("subscription_expires_at", p.SubscriptionExpiresAt)
	if err != nil {
		return next, err
	}
	expires, err := optionalMobileTime("expires_at", p.ExpiresAt)
	if err != nil {
		return next, err
	}
	if purchased, err := parseMobileTime(p.PurchaseDate); err == nil && subscriptionExpires != nil {
		next.Period = billing.PeriodBetween(purchased, *subscriptionExpires)
	}
	switch eventType {
	case "subscription_started", "subscription_renewed":
		next.Status, next.PeriodEnd = billing.StatusActive, subscriptionExpires
	case "subscription_cancelled":
		next.Status = billing.StatusCancelled
		if subscriptionExpires != nil {
			next.PeriodEnd = subscriptionExpires
		}
	case "subscription_expired":
		next.Status, next.PeriodEnd = billing.StatusExpired, &at
	case "subscription_refunded":
		next.Status, next.PeriodEnd = billing.StatusRefunded, &at
	case "non_subscription_purchase":
		next.Status, next.PeriodEnd = billing.StatusActive, billing.FirstTime(expires, subscriptionExpires)
		if p.IsLifetime != nil && *p.IsLifetime {
			next.PeriodEnd = nil
		}
	case "access_level_updated":
		next.PeriodEnd = billing.FirstTime(expires, subscriptionExpires)
		switch {
		case isTrue(p.IsRefund):
			next.Status = billing.StatusRefunded
		case p.IsActive != nil && !*p.IsActive:
			next.Status = billing.StatusExpired
		case isTrue(p.IsInGracePeriod):
			next.Status = billing.StatusPastDue
		case p.WillRenew != nil && !*p.WillRenew:
			next.Status = billing.StatusCancelled
		default:
			next.Status = billing.StatusActive
		}
		if isTrue(p.IsLifetime) {
			next.PeriodEnd = nil
		}
	}
	if (next.Status == billing.StatusExpired || next.Status == billing.StatusRefunded) && next.PeriodEnd == nil {
		next.PeriodEnd = &at
	}
	return next, nil
}

func isTrue(b *bool) bool { return b != nil && *b }
