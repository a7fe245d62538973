// Package stripe is the web provider's adapter (Stripe, or any provider that signs and
// shapes its events as Stripe does): it verifies the Web-Signature or Stripe-Signature
// header, names each event and reads subscriptions and paid invoices into canonical
// facts. Client, beside it, is the provider's API for checkout, the portal and backfill.
package stripe

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// Event types tollgate acts on.
const (
	subscriptionCreated = "customer.subscription.created"
	subscriptionUpdated = "customer.subscription.updated"
	subscriptionDeleted = "customer.subscription.deleted"
	invoicePaid         = "invoice.payment_succeeded"
)

// Adapter is the web provider's billing.Adapter.
type Adapter struct {
	secret string
}

// New is the adapter verifying with the webhook signing secret (WEB_WEBHOOK_SECRET).
func New(secret string) *Adapter { return &Adapter{secret: secret} }

func (a *Adapter) Provider() string { return billing.ProviderWeb }

// Verify checks the one signature header, under either name, against the raw body.
func (a *Adapter) Verify(h http.Header, body []byte, now time.Time) error {
	header, err := billing.SingleHeader(h, HeaderWebSignature, HeaderStripeSignature)
	if err != nil {
		return err
	}
	return verifySignature(a.secret, header, body, now)
}

// Parse reads the body once, for its envelope and for Read alike; a body the one-pass
// decoding cannot take goes the general way.
func (a *Adapter) Parse(body []byte) (billing.Event, error) {
	ev, decoded, err := decodeWebEvent(body)
	if err != nil {
		return ev, billing.BadEventID(err)
	}
	if decoded != nil {
		ev.Decoded = decoded
		return ev, nil
	}
	top, err := billing.DecodeTop(body)
	if err != nil {
		return billing.Event{}, billing.BadJSON(err)
	}
	if ev, err = envelope(top); err != nil {
		return ev, billing.BadEventID(err)
	}
	return ev, nil
}

// subscriptionReading is a subscription event's (or read's) snapshot and its subscription.
type subscriptionReading struct {
	snapshot snapshot
	sub      subscription
}

// snapshot is what a web subscription's stored state holds: the object of the last
// applied subscription event and that event's previous_attributes.
type snapshot struct {
	Object             json.RawMessage            `json:"object"`
	PreviousAttributes map[string]json.RawMessage `json:"previous_attributes,omitempty"`
}

func (a *Adapter) Read(ev billing.Event, body []byte) (billing.Reading, error) {
	w, _ := ev.Decoded.(*webEvent)
	if w == nil {
		w = &webEvent{}
		if err := json.Unmarshal(body, w); err != nil {
			return billing.Reading{}, billing.Invalidf("web event: %v", billing.JSONProblem(err))
		}
	}
	switch w.Type {
	case subscriptionCreated, subscriptionUpdated, subscriptionDeleted:
		sub, err := decodeWebSubscription(w.Data.Object)
		if err != nil {
			return billing.Reading{}, err
		}
		return billing.Reading{
			Subscription: sub.ID, Type: w.Type, At: time.Unix(w.Created, 0).UTC(), Customer: string(sub.Customer),
			Decoded: &subscriptionReading{snapshot{w.Data.Object, w.Data.PreviousAttributes}, sub},
		}, nil
	case invoicePaid:
		return readInvoice(w)
	}
	return billing.Reading{Ignore: "webhook event type ignored"}, nil
}

// readInvoice reads a paid invoice as a payment of its subscription.
func readInvoice(w *webEvent) (billing.Reading, error) {
	inv, err := decodeWebInvoice(w.Data.Object)
	if err != nil {
		return billing.Reading{}, err
	}
	subID := inv.subscriptionID()
	if subID == "" {
		return billing.Reading{Ignore: "invoice without subscription ignored"}, nil
	}
	paid := inv.paidThrough()
	if paid == nil {
		return billing.Reading{}, billing.Invalidf("invoice %s has no line periods", inv.ID)
	}
	at := time.Unix(w.Created, 0).UTC()
	return billing.Reading{
		Subscription: subID, Type: w.Type, At: at, Payment: &billing.Payment{Through: *paid, At: at},
		First: &billing.Facts{Link: string(inv.Customer), UserID: inv.userID(), Unresolved: unresolvedCustomer(string(inv.Customer)), Products: inv.priceIDs()},
	}, nil
}

func unresolvedCustomer(customerID string) error {
	return billing.NewUnresolved("unresolved web customer", "customer_id", customerID)
}

// ReadSnapshot reads a subscription object from the API, read at at. It is placed among
// events at the second of the read, as event times are: an event of that second may be
// later than the read, so it wins.
func (a *Adapter) ReadSnapshot(raw []byte, at time.Time) (billing.Reading, billing.SnapshotInfo, error) {
	sub, err := decodeWebSubscription(raw)
	info := billing.SnapshotInfo{Subscription: sub.ID, Customer: string(sub.Customer), Created: time.Unix(sub.Created, 0).UTC()}
	if err != nil {
		return billing.Reading{}, info, err
	}
	return billing.Reading{
		Subscription: sub.ID, Type: billing.SnapshotEventType, At: at.Truncate(time.Second), ReadAt: at, Snapshot: true, Customer: string(sub.Customer),
		Decoded: &subscriptionReading{snapshot{Object: raw}, sub},
	}, info, nil
}

func (a *Adapter) Order(r billing.Reading, stored billing.Stored) billing.Order {
	incoming := r.Decoded.(*subscriptionReading)
	if r.Snapshot {
		return snapshotOrder(r, incoming.snapshot.Object, stored)
	}
	if supersedes(r.Type, r.At, incoming.snapshot, stored) {
		return billing.Supersedes
	}
	return billing.Stale
}

func (a *Adapter) Apply(r billing.Reading, _ billing.Stored) ([]byte, any, error) {
	incoming := r.Decoded.(*subscriptionReading)
	state, err := json.Marshal(incoming.snapshot)
	return state, &incoming.sub, err
}

// Facts maps the stored snapshot, and the payments seen for it, to the canonical row.
func (a *Adapter) Facts(stored billing.Stored) (billing.Facts, error) {
	sub, _ := stored.Decoded.(*subscription)
	if sub == nil {
		var snap snapshot
		if err := json.Unmarshal([]byte(stored.State), &snap); err != nil {
			return billing.Facts{}, err
		}
		decoded, err := decodeWebSubscription(snap.Object)
		if err != nil {
			return billing.Facts{}, err
		}
		sub = &decoded
	}
	status, periodEnd, err := canonical(*sub, stored.LastEventAt, stored.PaidThrough, stored.PaidAt)
	if err != nil {
		return billing.Facts{}, err
	}
	amount, currency, period := sub.amount()
	return billing.Facts{
		Link: string(sub.Customer), UserID: sub.userID(), Unresolved: unresolvedCustomer(string(sub.Customer)),
		Status: status, PeriodEnd: periodEnd, Products: sub.priceIDs(), Amount: amount, Currency: currency, Period: period,
	}, nil
}
