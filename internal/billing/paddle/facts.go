package paddle

import (
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// Facts: the user is custom_data.user_id (a checkout's), else the user the Paddle
// customer is linked to; the plan is the items' prices among the plans' web_prices. The
// status follows Paddle's (docs/providers.md, "Paddle Billing"); a payment of a later
// period extends it; an approved full refund or chargeback of the transaction that paid
// for the latest period ends that period when it was made, for good.
func (a *Adapter) Facts(stored billing.Stored) (billing.Facts, error) {
	s, err := storedState(stored)
	if err != nil {
		return billing.Facts{}, err
	}
	f := billing.Facts{Link: s.Customer, UserID: s.User, PriceList: billing.ProviderWeb,
		Unresolved: billing.NewUnresolved("unresolved paddle customer", "customer_id", s.Customer)}
	txn, paid := s.latestPayment()
	switch {
	case s.Sub != nil:
		f.Status, f.PeriodEnd = s.Sub.canonical(s.SubAt)
		f.Products, f.Amount, f.Currency, f.Period = s.Sub.Prices, s.Sub.Amount, s.Sub.Currency, s.Sub.Period
		if txn != "" && f.PeriodEnd != nil && paid.Through.After(*f.PeriodEnd) && (f.Status == billing.StatusActive || f.Status == billing.StatusPastDue) {
			through := paid.Through // a renewal paid before its subscription.updated arrived
			f.Status, f.PeriodEnd = billing.StatusActive, &through
		}
	case txn != "":
		through := paid.Through // the transaction arrived before its subscription
		f.Status, f.PeriodEnd, f.Products = billing.StatusActive, &through, paid.Prices
	default:
		return billing.Facts{}, billing.NewUnresolved("a Paddle refund of a transaction not heard of yet", "customer_id", s.Customer)
	}
	if at, ok := s.refunded(txn); ok && (f.PeriodEnd == nil || !paid.Through.Before(*f.PeriodEnd)) {
		f.Status, f.PeriodEnd = billing.StatusRefunded, &at
	}
	return f, nil
}

// canonical is Paddle's status as tollgate's: active or trialing until the period's end
// (cancelled until then when a cancellation is scheduled; active until a scheduled pause);
// past_due until the period's end while Paddle retries the payment; paused entitles to
// nothing from when it paused; canceled is expired from when it was canceled.
func (s *subState) canonical(at time.Time) (string, *time.Time) {
	end := s.PeriodEnd
	switch s.Status {
	case "active", "trialing":
		status := billing.StatusActive
		if s.Status == "trialing" {
			status = billing.StatusTrialing
		}
		if s.CancelAt != nil {
			status, end = billing.StatusCancelled, earlier(end, s.CancelAt)
		}
		if s.PauseAt != nil {
			end = earlier(end, s.PauseAt)
		}
		return status, end
	case "past_due":
		return billing.StatusPastDue, end
	case "paused":
		return billing.StatusPastDue, orAt(s.PausedAt, at)
	case "canceled":
		return billing.StatusExpired, orAt(s.CanceledAt, at)
	}
	return billing.StatusPastDue, &at // a status Paddle may add: nothing until it is known
}

// latestPayment is the completed transaction that paid for the latest period.
func (s state) latestPayment() (string, payment) {
	var id string
	var latest payment
	for txn, p := range s.Paid {
		if id == "" || p.Through.After(latest.Through) || (p.Through.Equal(latest.Through) && txn > id) {
			id, latest = txn, p
		}
	}
	return id, latest
}

// refunded is when txn was refunded or charged back in full, once approved.
func (s state) refunded(txn string) (time.Time, bool) {
	var at time.Time
	found := false
	for _, r := range s.Refunds {
		if txn != "" && r.Transaction == txn && r.Status == "approved" && (!found || r.At.Before(at)) {
			at, found = r.At, true
		}
	}
	return at, found
}

func earlier(a, b *time.Time) *time.Time {
	if a == nil || b.Before(*a) {
		return b
	}
	return a
}

func orAt(t *time.Time, at time.Time) *time.Time {
	if t != nil {
		return t
	}
	return &at
}
