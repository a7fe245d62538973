package paddle

import (
	"encoding/json"
	"maps"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// state is what a Paddle subscription's stored state holds. Paddle sends three kinds of
// notification about a subscription — the subscription itself, the transactions that pay
// for its periods, and the adjustments (refunds, chargebacks) of those transactions — and
// each folds into its own part, so that the order they arrive in does not matter.
type state struct {
	// Sub is the subscription as its latest notification (or read) had it, at SubAt.
	Sub   *subState `json:"sub,omitempty"`
	SubAt time.Time `json:"sub_at"`
	// Paid: each completed transaction, by id, with the period it paid for.
	Paid map[string]payment `json:"paid,omitempty"`
	// Refunds: each full refund or chargeback, by adjustment id, as its latest notification
	// had it.
	Refunds  map[string]refund `json:"refunds,omitempty"`
	Customer string            `json:"customer,omitempty"`
	User     string            `json:"user,omitempty"`
}

type subState struct {
	Status     string     `json:"status"`
	PeriodEnd  *time.Time `json:"period_end,omitempty"`
	PausedAt   *time.Time `json:"paused_at,omitempty"`
	CanceledAt *time.Time `json:"canceled_at,omitempty"`
	// CancelAt and PauseAt: a change Paddle has scheduled for then.
	CancelAt *time.Time `json:"cancel_at,omitempty"`
	PauseAt  *time.Time `json:"pause_at,omitempty"`
	Prices   []string   `json:"prices,omitempty"`
	Amount   int64      `json:"amount,omitempty"`
	Currency string     `json:"currency,omitempty"`
	Period   string     `json:"period,omitempty"`
}

type payment struct {
	Through time.Time `json:"through"`
	Prices  []string  `json:"prices,omitempty"`
}

type refund struct {
	Transaction string    `json:"transaction"`
	Status      string    `json:"status"`
	At          time.Time `json:"at"`
}

// reading is what one notification (or read) says, for Order and Apply.
type reading struct {
	sub        *subscription
	txn        *transaction
	adjustment *adjustment
}

// fold is stored with r folded in: a subscription newer than the stored one replaces it
// (unless the stored one is canceled),
// a payment or a refund is added (a refund's later status replaces its earlier one).
func fold(s state, r billing.Reading) state {
	next := s
	next.Paid, next.Refunds = maps.Clone(s.Paid), maps.Clone(s.Refunds)
	switch d := r.Decoded.(*reading); {
	case d.sub != nil:
		// A canceled subscription is final: Paddle never brings one back, so a later
		// notification of another status (a retry's past_due, out of order) replaces nothing.
		if next.Sub == nil || r.At.After(next.SubAt) && (next.Sub.Status != "canceled" || d.sub.Status == "canceled") {
			next.Sub, next.SubAt = subStateOf(d.sub), r.At
		}
		if p := d.sub.CurrentBillingPeriod; d.sub.TransactionID != "" && p != nil {
			next.addPayment(d.sub.TransactionID, payment{Through: p.EndsAt, Prices: next.Sub.Prices})
		}
		next.know(d.sub.CustomerID, userOf(d.sub.CustomData))
	case d.txn != nil:
		if d.txn.BillingPeriod != nil {
			ids, _, _, _ := prices(d.txn.Items)
			next.addPayment(d.txn.ID, payment{Through: d.txn.BillingPeriod.EndsAt, Prices: ids})
		}
		next.know(d.txn.CustomerID, userOf(d.txn.CustomData))
	case d.adjustment != nil:
		if old, ok := next.Refunds[d.adjustment.ID]; !ok || r.At.After(old.At) {
			if next.Refunds == nil {
				next.Refunds = map[string]refund{}
			}
			next.Refunds[d.adjustment.ID] = refund{Transaction: d.adjustment.TransactionID, Status: d.adjustment.Status, At: r.At}
		}
		next.know(d.adjustment.CustomerID, "")
	}
	return next
}

func (s *state) addPayment(txn string, p payment) {
	if _, ok := s.Paid[txn]; ok {
		return
	}
	if s.Paid == nil {
		s.Paid = map[string]payment{}
	}
	s.Paid[txn] = p
}

func (s *state) know(customer, user string) {
	if customer != "" {
		s.Customer = customer
	}
	if user != "" {
		s.User = user
	}
}

func subStateOf(sub *subscription) *subState {
	s := &subState{Status: sub.Status, PausedAt: sub.PausedAt, CanceledAt: sub.CanceledAt}
	if p := sub.CurrentBillingPeriod; p != nil {
		end := p.EndsAt
		s.PeriodEnd = &end
	}
	if c := sub.ScheduledChange; c != nil {
		at := c.EffectiveAt
		switch c.Action {
		case "cancel":
			s.CancelAt = &at
		case "pause":
			s.PauseAt = &at
		}
	}
	s.Prices, s.Amount, s.Currency, s.Period = prices(sub.Items)
	return s
}

// Order: a notification that changes nothing of what is stored is stale (an older
// subscription, a payment or refund already known); any other is folded in.
func (a *Adapter) Order(r billing.Reading, stored billing.Stored) billing.Order {
	s, err := storedState(stored)
	if err != nil {
		return billing.Supersedes // Apply says what is wrong
	}
	next := fold(s, r)
	if r.Snapshot {
		// A read that finds what is stored writes nothing: the time of the read alone is
		// no change.
		next.SubAt, s.SubAt = time.Time{}, time.Time{}
	}
	before, _ := json.Marshal(s)
	after, _ := json.Marshal(next)
	switch {
	case string(before) != string(after):
		return billing.Supersedes
	case r.Snapshot:
		return billing.Same
	}
	return billing.Stale
}

// Apply folds the reading into the stored state.
func (a *Adapter) Apply(r billing.Reading, stored billing.Stored) ([]byte, any, error) {
	s, err := storedState(stored)
	if err != nil {
		return nil, nil, err
	}
	if r.Type == billing.ReplacedEventType {
		return nil, nil, billing.Invalidf("a Paddle subscription is never replaced by another")
	}
	next := fold(s, r)
	raw, err := json.Marshal(next)
	return raw, &next, err
}

func storedState(stored billing.Stored) (state, error) {
	if s, ok := stored.Decoded.(*state); ok {
		return *s, nil
	}
	var s state
	if stored.State == "" {
		return s, nil
	}
	err := json.Unmarshal([]byte(stored.State), &s)
	return s, err
}
