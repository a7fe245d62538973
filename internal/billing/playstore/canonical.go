package playstore

import (
	"encoding/json"
	"strings"
	"time"

	"google.golang.org/api/androidpublisher/v3"

	"github.com/tollgate/tollgate/internal/billing"
)

// state is what a Play subscription's stored state holds: the canonical result of the
// last read or revocation.
type state struct {
	Status    string     `json:"status"`
	PeriodEnd *time.Time `json:"period_end"`
	ProductID string     `json:"product_id"`
	Amount    int64      `json:"amount,omitempty"`
	Currency  string     `json:"currency,omitempty"`
	User      string     `json:"user"`
	// OneTime: a one-time product's purchase, which entitles from Purchased for its
	// product's lasts (the plans file) when it has one, else for good.
	OneTime   bool       `json:"one_time,omitempty"`
	Purchased *time.Time `json:"purchased,omitempty"`
	// Order is the order that paid for the period read (the line item's
	// latestSuccessfulOrderId; a one-time product's orderId), and Expires that period's end.
	Order   string     `json:"order,omitempty"`
	Expires *time.Time `json:"expires,omitempty"`
	// Revoked, once a revocation or a void ended the purchase, is what it took.
	Revoked *revocation `json:"revoked,omitempty"`
}

// revoked is the event type a revocation or a voided purchase is stored under.
const revoked = "revoked"

// Read says which purchase (its token) a push is about: for a subscription, the state
// Google's API gave when it was read; a revocation or a voided purchase, as of the event.
func (a *Adapter) Read(ev billing.Event, body []byte) (billing.Reading, error) {
	p, _ := ev.Decoded.(*parsed)
	if p == nil {
		var err error
		if p, err = decode(body); err != nil {
			return billing.Reading{}, billing.Invalidf("play notification: %v", err)
		}
	}
	n := p.notification
	at, dated := n.eventTime()
	switch {
	case n.TestNotification != nil:
		return billing.Reading{Ignore: "play test notification"}, nil
	case n.VoidedPurchaseNotification != nil && dated:
		return billing.Reading{Subscription: n.VoidedPurchaseNotification.PurchaseToken, Type: revoked, At: at, Decoded: p}, nil
	case n.OneTimeProductNotification != nil:
		return readProduct(p)
	case n.SubscriptionNotification == nil:
		return billing.Reading{Ignore: "play notification kind ignored"}, nil
	case n.SubscriptionNotification.NotificationType == subscriptionRevoked && dated:
		return billing.Reading{Subscription: n.SubscriptionNotification.PurchaseToken, Type: revoked, At: at}, nil
	case p.unknown:
		return billing.Reading{}, billing.NewUnresolved("purchase token unknown to Google", "subscription_id", n.SubscriptionNotification.SubscriptionID)
	case p.purchase == nil:
		return billing.Reading{}, billing.Invalidf("play notification %s: the purchase was not read from Google", p.id)
	}
	customer := ""
	if ids := p.purchase.ExternalAccountIdentifiers; ids != nil {
		customer = ids.ObfuscatedExternalAccountId
	}
	return billing.Reading{
		Subscription: n.SubscriptionNotification.PurchaseToken, Type: billing.SnapshotEventType, At: p.read, Snapshot: true,
		Customer: customer, Decoded: p, Replaces: replaced(p.purchase),
	}, nil
}

// replaced is the purchase a subscription purchase replaces (an upgrade or a downgrade's
// linkedPurchaseToken) once it has become active. A plan change still pending, or
// abandoned while pending, replaces nothing: Google keeps the linked purchase active and
// says to keep reading it.
func replaced(p *androidpublisher.SubscriptionPurchaseV2) string {
	switch p.SubscriptionState {
	case "SUBSCRIPTION_STATE_PENDING", "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED":
		return ""
	}
	return p.LinkedPurchaseToken
}

// readProduct reads a one-time product's purchase, as read from Google, as a purchase for
// good (as the mobile provider's non-subscription purchases are).
func readProduct(p *parsed) (billing.Reading, error) {
	one := p.notification.OneTimeProductNotification
	switch {
	case p.unknown:
		return billing.Reading{}, billing.NewUnresolved("purchase token unknown to Google", "product_id", one.Sku)
	case p.product == nil:
		return billing.Reading{}, billing.Invalidf("play notification %s: the purchase was not read from Google", p.id)
	}
	return billing.Reading{
		Subscription: one.PurchaseToken, Type: billing.SnapshotEventType, At: p.read, Snapshot: true,
		Customer: p.product.ObfuscatedExternalAccountId, Decoded: p,
	}, nil
}

// Order: a revocation or a void is final for the period it took (revocations.go); else a
// read supersedes what is older than it, and a revocation supersedes what is older.
func (a *Adapter) Order(r billing.Reading, stored billing.Stored) billing.Order {
	prev, err := storedState(stored)
	if err != nil {
		return billing.Supersedes // Apply reports it
	}
	if r.Snapshot {
		rv := prev.revocation(stored)
		return billing.BySnapshot(r, stored, rv != nil && !rv.givenBack(r), func() bool { return a.sameRead(r, stored) })
	}
	if !prev.voidedBy(r) {
		return billing.Stale // a void of an earlier order: recorded only
	}
	if stored.LastEventType == revoked && !r.At.After(stored.LastEventAt) {
		return billing.Stale
	}
	return billing.Supersedes // a revocation ends the purchase whatever was read before
}

// sameRead: the read gives exactly the state stored, for the same customer; a pass that
// finds so writes nothing.
func (a *Adapter) sameRead(r billing.Reading, stored billing.Stored) bool {
	next, _, err := a.Apply(r, stored)
	return err == nil && string(next) == stored.State && r.Customer == stored.Customer
}

// Apply gives the subscription's state from Google's read, or refunded on a revocation
// (docs/providers.md, "Google Play").
func (a *Adapter) Apply(r billing.Reading, stored billing.Stored) ([]byte, any, error) {
	var next state
	if r.Type == revoked || r.Type == billing.ReplacedEventType {
		prev, err := storedState(stored)
		if err != nil {
			return nil, nil, err
		}
		next = prev
		at := r.At
		next.Status, next.PeriodEnd = billing.StatusRefunded, &at
		if r.Type == billing.ReplacedEventType {
			next.Status = billing.StatusExpired // replaced by an upgrade, not refunded
		} else if prev.Revoked == nil {
			next.Revoked = &revocation{Order: prev.Order, Expires: prev.paidThrough()}
		}
	} else if p := r.Decoded.(*parsed); p.product != nil {
		next = fromProduct(p.product, p.notification.OneTimeProductNotification.Sku, r.At)
	} else {
		var err error
		if next, err = fromPurchase(p.purchase, r.At); err != nil {
			return nil, nil, err
		}
	}
	raw, err := json.Marshal(next)
	return raw, &next, err
}

// fromPurchase maps a subscription purchase, read at at, to its canonical state.
func fromPurchase(p *androidpublisher.SubscriptionPurchaseV2, at time.Time) (state, error) {
	var s state
	if ids := p.ExternalAccountIdentifiers; ids != nil {
		s.User = ids.ObfuscatedExternalAccountId
	}
	for _, item := range p.LineItems {
		if end, err := time.Parse(time.RFC3339Nano, item.ExpiryTime); err == nil && (s.PeriodEnd == nil || end.After(*s.PeriodEnd)) {
			end = end.UTC()
			s.PeriodEnd, s.Expires, s.ProductID, s.Order = &end, &end, item.ProductId, item.LatestSuccessfulOrderId
			s.Amount, s.Currency = recurringPrice(item)
		}
		if s.ProductID == "" {
			s.ProductID = item.ProductId
		}
	}
	ended := func() *time.Time {
		if s.PeriodEnd != nil && s.PeriodEnd.Before(at) {
			return s.PeriodEnd
		}
		return &at
	}
	switch p.SubscriptionState {
	case "SUBSCRIPTION_STATE_ACTIVE":
		s.Status = billing.StatusActive
	case "SUBSCRIPTION_STATE_IN_GRACE_PERIOD":
		s.Status = billing.StatusPastDue // entitled until the line item's expiry, which the grace period extends
	case "SUBSCRIPTION_STATE_ON_HOLD", "SUBSCRIPTION_STATE_PAUSED", "SUBSCRIPTION_STATE_PENDING":
		s.Status, s.PeriodEnd = billing.StatusPastDue, ended()
	case "SUBSCRIPTION_STATE_CANCELED":
		s.Status = billing.StatusCancelled // entitled until it expires
	case "SUBSCRIPTION_STATE_EXPIRED", "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED":
		s.Status, s.PeriodEnd = billing.StatusExpired, ended()
	default:
		return s, billing.Invalidf("play purchase in state %q", p.SubscriptionState)
	}
	return s, nil
}

// recurringPrice is what the line item's plan renews at, in the currency's minor unit.
// Play names the base plan but not its billing period, so the period stays unknown and
// MRR counts the subscriber without the money.
func recurringPrice(item *androidpublisher.SubscriptionPurchaseLineItem) (int64, string) {
	if item.AutoRenewingPlan == nil || item.AutoRenewingPlan.RecurringPrice == nil {
		return 0, ""
	}
	m := item.AutoRenewingPlan.RecurringPrice
	major := float64(m.Units) + float64(m.Nanos)/1e9
	amount, ok := billing.MinorUnits(&major, m.CurrencyCode)
	if !ok {
		return 0, ""
	}
	return amount, strings.ToLower(m.CurrencyCode)
}

// fromProduct maps a one-time product's purchase, read at at: purchased entitles for its
// product's lasts, or for good without one; consumed (a consumable used up) entitles
// nothing; cancelled is refunded; pending entitles to nothing yet.
func fromProduct(p *androidpublisher.ProductPurchase, sku string, at time.Time) state {
	s := state{ProductID: sku, User: p.ObfuscatedExternalAccountId, Order: p.OrderId}
	switch {
	case p.PurchaseState == 0 && p.ConsumptionState == 1:
		s.Status, s.PeriodEnd = billing.StatusExpired, &at
	case p.PurchaseState == 0:
		purchased := at
		if p.PurchaseTimeMillis > 0 {
			purchased = time.UnixMilli(p.PurchaseTimeMillis).UTC()
		}
		s.Status, s.OneTime, s.Purchased = billing.StatusActive, true, &purchased // no period end unless it lasts a while
	case p.PurchaseState == 1:
		s.Status, s.PeriodEnd = billing.StatusRefunded, &at
	default:
		s.Status, s.PeriodEnd = billing.StatusPastDue, &at
	}
	return s
}

// Facts: the user is the purchase's obfuscatedExternalAccountId; the product maps through
// the plans' mobile_products.
func (a *Adapter) Facts(stored billing.Stored) (billing.Facts, error) {
	s, err := storedState(stored)
	if err != nil {
		return billing.Facts{}, err
	}
	f := billing.Facts{
		UserID: s.User, KeepsUser: true, Unresolved: billing.NewUnresolved("unresolved play customer", "obfuscated_account_id", s.User),
		Status: s.Status, PeriodEnd: s.PeriodEnd, Products: []string{s.ProductID}, PriceList: billing.ProviderMobile,
		Amount: s.Amount, Currency: s.Currency,
	}
	if s.OneTime && s.Purchased != nil {
		f.Lasts, f.Purchased = billing.LastsOrForGood, *s.Purchased
	}
	return f, nil
}
