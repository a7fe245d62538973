package appstore

import (
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// A refund (REFUND, or REVOKE for family sharing) ends access at once and is final for the
// period it paid for: a later notification or read of that period does not give it back.
// Only REFUND_REVERSED does — ordered against the refund by signedDate, and giving back
// exactly what the refund took — or a later paid period (a later expiresDate). A refund of
// an earlier period than the one stored does not end the later one.

// refund is what a refund took: the period it paid for (its transaction's expiresDate),
// and the status and access a reversal gives back.
type refund struct {
	Expires   *time.Time `json:"expires,omitempty"`
	Status    string     `json:"status"`
	PeriodEnd *time.Time `json:"period_end,omitempty"`
}

// taken is what a refund of the period ending expires takes from prev (live: the status
// of a subscription nothing was stored of). A second refund takes nothing more.
func (prev state) taken(expires *time.Time, live string) *refund {
	switch {
	case prev.Refund != nil:
		return prev.Refund
	case prev.Status == "":
		return &refund{Expires: expires, Status: live, PeriodEnd: expires}
	}
	return &refund{Expires: expires, Status: prev.Status, PeriodEnd: prev.PeriodEnd}
}

// paidThrough is the end of the period prev paid for (a state stored before Expires was
// kept: its PeriodEnd).
func (prev state) paidThrough() *time.Time {
	if prev.Expires != nil {
		return prev.Expires
	}
	return prev.PeriodEnd
}

// byRefund decides r's order when a refund is involved: decided false leaves it to the
// ordering by time.
func byRefund(r billing.Reading, stored billing.Stored) (o billing.Order, decided bool) {
	if !stored.HasState() {
		return 0, false
	}
	prev, err := storedState(stored)
	if err != nil {
		return 0, false // Apply reports it
	}
	expires, isRefund, isReversal := readingPeriod(r)
	switch paid := prev.paidThrough(); {
	case isRefund && expires != nil && paid != nil && expires.Before(*paid):
		return billing.Stale, true // a refund of an earlier period: the later one stands
	case prev.Refund == nil || isReversal:
		return 0, false
	case expires != nil && prev.Refund.Expires != nil && expires.After(*prev.Refund.Expires):
		return billing.Supersedes, true // a later paid period, whenever it was signed
	case isRefund:
		return 0, false // a second word of the refund: by time, as any notification
	}
	return billing.Stale, true // the refunded period heard or read again: the refund stands
}

// readingPeriod is the expiresDate of the transaction r carries, and whether r takes the
// purchase away (a refund, a revocation, a status read as revoked) or gives it back.
func readingPeriod(r billing.Reading) (expires *time.Time, isRefund, isReversal bool) {
	switch d := r.Decoded.(type) {
	case *parsed:
		switch d.notification.NotificationType {
		case "REFUND", "REVOKE":
			isRefund = true
		case "REFUND_REVERSED":
			isReversal = true
		case claimed:
			isRefund = d.transaction.RevocationDate != nil
		}
		return millis(d.transaction.ExpiresDate), isRefund, isReversal
	case *SubscriptionStatus:
		return millis(d.Transaction.ExpiresDate), d.Status == StatusRevoked, false
	}
	return nil, false, false
}
