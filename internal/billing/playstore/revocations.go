package playstore

import (
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// A revocation (SUBSCRIPTION_REVOKED) or a void of the order that paid the current period
// ends access at once, as refunded, and is final for that period: a later read of the same
// period (the same order, no later expiry — Play may still report the subscription
// cancelled but running) does not give it back; a later paid period (a new order, a later
// expiry) does. A void of an earlier order is recorded and changes nothing.

// revocation is what a revocation took: the order that paid the period, and its end.
type revocation struct {
	Order   string     `json:"order,omitempty"`
	Expires *time.Time `json:"expires,omitempty"`
}

// revocation is what revoked prev, if anything did. A revocation stored before tollgate kept
// what it took names neither order nor period, so no read can show a later one: it stays
// final, as every revocation was then.
func (prev state) revocation(stored billing.Stored) *revocation {
	if prev.Revoked == nil && stored.LastEventType == revoked {
		return &revocation{}
	}
	return prev.Revoked
}

// givenBack says whether the read r is of a later paid period than the one revoked.
func (rv *revocation) givenBack(r billing.Reading) bool {
	p, _ := r.Decoded.(*parsed)
	if p == nil || p.purchase == nil {
		return false
	}
	next, err := fromPurchase(p.purchase, r.At)
	switch {
	case err != nil:
		return false
	case next.Order != "" && rv.Order != "" && next.Order != rv.Order:
		return true
	}
	return next.Expires != nil && rv.Expires != nil && next.Expires.After(*rv.Expires)
}

// voidedBy says whether the revocation r ends prev: a revocation always does, a void only
// when it is of the order that paid the period prev holds (or prev names no order).
func (prev state) voidedBy(r billing.Reading) bool {
	p, _ := r.Decoded.(*parsed)
	if p == nil || p.notification.VoidedPurchaseNotification == nil {
		return true
	}
	order := p.notification.VoidedPurchaseNotification.OrderID
	// A renewal's order id extends the first order's ("GPA.1234-5678-9012-34567..0") and
	// is an order of its own: only the very id is the same order.
	return order == "" || prev.Order == "" || order == prev.Order
}

// paidThrough is the end of the period prev paid for (a state stored before Expires was
// kept: its PeriodEnd).
func (prev state) paidThrough() *time.Time {
	if prev.Expires != nil {
		return prev.Expires
	}
	return prev.PeriodEnd
}

// storedState is the stored state decoded; the zero state when nothing is stored.
func storedState(stored billing.Stored) (state, error) { return billing.StoredState[state](stored) }
