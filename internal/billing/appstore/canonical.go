package appstore

import (
	"cmp"
	"encoding/json"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// rank orders notifications signed at the same instant: a later stage of a subscription's
// life wins the tie. Only these types change a subscription.
var rank = map[string]int{
	"SUBSCRIBED": 1, "DID_RENEW": 1, "OFFER_REDEEMED": 1, "RENEWAL_EXTENDED": 1, "REFUND_REVERSED": 1,
	"DID_CHANGE_RENEWAL_PREF": 1, "ONE_TIME_CHARGE": 1,
	"DID_CHANGE_RENEWAL_STATUS": 2, "DID_FAIL_TO_RENEW": 2,
	"EXPIRED": 3, "GRACE_PERIOD_EXPIRED": 3, "REFUND": 3, "REVOKE": 3,
}

// state is what an App Store subscription's stored state holds: the canonical result of
// the last applied notification.
type state struct {
	Status    string     `json:"status"`
	PeriodEnd *time.Time `json:"period_end"`
	ProductID string     `json:"product_id"`
	User      string     `json:"user"`
	Amount    int64      `json:"amount,omitempty"`
	Currency  string     `json:"currency,omitempty"`
	Period    string     `json:"period,omitempty"`
	// NonRenewing: a Non-Renewing Subscription, which entitles from Purchased for its
	// product's lasts (the plans file), and without one entitles nothing.
	NonRenewing bool       `json:"non_renewing,omitempty"`
	Purchased   *time.Time `json:"purchased,omitempty"`
	// Expires is the transaction's expiresDate: the end of the period it paid for, which
	// PeriodEnd leaves when an expiry, a refund or a billing problem ends access sooner.
	Expires *time.Time `json:"expires,omitempty"`
	// Refund, while a refund or revocation stands, is what it took.
	Refund *refund `json:"refund,omitempty"`
}

// The transaction types Apple names (JWSTransactionDecodedPayload.type).
const (
	typeConsumable  = "Consumable"
	typeNonRenewing = "Non-Renewing Subscription"
)

// Read says which subscription (its original transaction) a notification is about.
func (a *Adapter) Read(ev billing.Event, body []byte) (billing.Reading, error) {
	p, _ := ev.Decoded.(*parsed)
	if p == nil {
		var err error
		if p, err = decode(body); err != nil {
			return billing.Reading{}, billing.Invalidf("app store notification: %v", err)
		}
	}
	n := p.notification
	switch _, handled := rank[n.NotificationType]; {
	case n.NotificationType == "TEST":
		return billing.Reading{Ignore: "app store test notification"}, nil
	case n.Data == nil: // a summary, an external purchase token, a consent rescinded: no subscription's change
		return billing.Reading{Ignore: "app store notification about no subscription ignored"}, nil
	case !handled:
		return billing.Reading{Ignore: "webhook event type ignored"}, nil
	case n.NotificationType == "DID_CHANGE_RENEWAL_PREF" && n.Subtype != "UPGRADE":
		return billing.Reading{Ignore: "a downgrade takes effect at renewal"}, nil
	case p.transaction.OriginalTransactionID == "":
		return billing.Reading{}, billing.Invalidf("app store notification %s has no signed transaction", n.NotificationUUID)
	case n.SignedDate <= 0:
		return billing.Reading{}, billing.Invalidf("app store notification %s has no signedDate", n.NotificationUUID)
	case p.transaction.Type == typeConsumable:
		return billing.Reading{Ignore: "a consumable purchase entitles nothing"}, nil
	}
	return billing.Reading{
		Subscription: p.transaction.OriginalTransactionID, Type: n.NotificationType, At: time.UnixMilli(n.SignedDate).UTC(),
		Customer: p.transaction.AppAccountToken, Decoded: p,
	}, nil
}

// Order: a refund's rule first (refunds.go); else later notifications win, at the same
// instant the later stage of life wins, and between equals the later arrival. A read (a
// transaction the app reported, a status read from the API) is placed as of when Apple
// signed it.
func (a *Adapter) Order(r billing.Reading, stored billing.Stored) billing.Order {
	if o, decided := byRefund(r, stored); decided {
		return o
	}
	if r.Snapshot {
		return billing.BySnapshot(r, stored, false, func() bool { return sameRead(r, stored) })
	}
	if o, decided := billing.ByTime(r.At, stored); decided {
		return o
	}
	if rank[r.Type] >= rank[stored.LastEventType] {
		return billing.Supersedes
	}
	return billing.Stale
}

// Apply gives the subscription's state after the notification or status read (docs/
// providers.md, "App Store").
func (a *Adapter) Apply(r billing.Reading, stored billing.Stored) ([]byte, any, error) {
	prev, err := storedState(stored)
	if err != nil {
		return nil, nil, err
	}
	var next state
	if s, ok := r.Decoded.(*SubscriptionStatus); ok {
		if next, err = fromStatus(s, prev, r.At); err != nil {
			return nil, nil, err
		}
	} else {
		next = fromNotification(r.Decoded.(*parsed), prev, r.At)
	}
	raw, err := json.Marshal(next)
	return raw, &next, err
}

// fromTransaction is the state a transaction says, before its status is known.
func fromTransaction(tx transaction, at time.Time) (next state, live string) {
	next = state{ProductID: tx.ProductID, User: strings.ToLower(tx.AppAccountToken), PeriodEnd: millis(tx.ExpiresDate),
		Expires: millis(tx.ExpiresDate), NonRenewing: tx.Type == typeNonRenewing, Purchased: cmp.Or(millis(tx.PurchaseDate), &at)}
	next.Amount, next.Currency = tx.amount()
	next.Period = tx.period()
	live = billing.StatusActive
	if tx.freeTrial() {
		live = billing.StatusTrialing
	}
	return next, live
}

// fromNotification is the state after a notification (or a transaction the app reported)
// signed at at, prev the state stored before it.
func fromNotification(p *parsed, prev state, at time.Time) state {
	next, live := fromTransaction(p.transaction, at)
	switch n := p.notification; n.NotificationType {
	case claimed:
		next.Status = live
		switch revoked := millis(p.transaction.RevocationDate); {
		case revoked != nil:
			next.Status, next.PeriodEnd, next.Refund = billing.StatusRefunded, revoked, prev.taken(next.Expires, live)
		case next.PeriodEnd != nil && !next.PeriodEnd.After(at):
			next.Status = billing.StatusExpired
		}
	case "DID_CHANGE_RENEWAL_STATUS":
		next.Status = live
		if n.Subtype == "AUTO_RENEW_DISABLED" {
			next.Status = billing.StatusCancelled // entitled until the period ends
		}
	case "DID_FAIL_TO_RENEW":
		next.Status = billing.StatusPastDue
		if grace := millis(p.renewal.GracePeriodExpiresDate); n.Subtype == "GRACE_PERIOD" && grace != nil {
			next.PeriodEnd = grace // Apple keeps access until the grace period ends
		}
	case "EXPIRED", "GRACE_PERIOD_EXPIRED":
		next.Status, next.PeriodEnd = billing.StatusExpired, &at
	case "REFUND", "REVOKE":
		next.Status, next.PeriodEnd, next.Refund = billing.StatusRefunded, &at, prev.taken(next.Expires, live)
	case "REFUND_REVERSED":
		next.Status = live
		if prev.Refund != nil { // exactly what the refund took comes back
			next.Status, next.PeriodEnd = prev.Refund.Status, cmp.Or(prev.Refund.PeriodEnd, next.PeriodEnd)
		}
	default: // SUBSCRIBED, DID_RENEW, OFFER_REDEEMED, RENEWAL_EXTENDED, an upgrade, ONE_TIME_CHARGE
		next.Status = live
	}
	if next.PeriodEnd == nil && next.Status == billing.StatusPastDue {
		next.PeriodEnd = &at
	}
	return next
}

// storedState is the stored state decoded; the zero state when nothing is stored.
func storedState(stored billing.Stored) (state, error) { return billing.StoredState[state](stored) }

// Facts: the user is the transaction's appAccountToken; the product maps through the plans'
// mobile_products, as the mobile provider's does.
func (a *Adapter) Facts(stored billing.Stored) (billing.Facts, error) {
	s, err := storedState(stored)
	if err != nil {
		return billing.Facts{}, err
	}
	f := billing.Facts{
		UserID: s.User, KeepsUser: true, Unresolved: billing.NewUnresolved("unresolved app store customer", "app_account_token", s.User),
		Status: s.Status, PeriodEnd: s.PeriodEnd, Products: []string{s.ProductID}, PriceList: billing.ProviderMobile,
		Amount: s.Amount, Currency: s.Currency, Period: s.Period,
	}
	if s.NonRenewing && s.Purchased != nil {
		f.Lasts, f.Purchased = billing.LastsRequired, *s.Purchased
	}
	return f, nil
}
