// Package paddle is Paddle Billing's adapter: notifications verified by their
// Paddle-Signature, subscriptions moved by Paddle's status and scheduled changes, the
// transactions that pay for their periods, and the refunds and chargebacks that take a
// period back. Its API client (api.go) reads subscriptions for reconcile, and makes
// checkouts and customer portal sessions.
package paddle

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// Provider is Paddle's name: its webhook route's last segment, the key of its rows.
const Provider = "paddle"

// Adapter is Paddle's dialect.
type Adapter struct {
	// secrets are the notification destinations' secret keys (several during a rotation,
	// or for several destinations).
	secrets []string
}

// New is the adapter verifying with any of secrets.
func New(secrets []string) *Adapter { return &Adapter{secrets: secrets} }

func (a *Adapter) Provider() string { return Provider }

// Verify checks the Paddle-Signature header: an h1 signed with one of the secrets, at a
// timestamp within 5 minutes of now.
func (a *Adapter) Verify(h http.Header, body []byte, now time.Time) error {
	header, err := signatureOf(h)
	if err != nil {
		return err
	}
	return verify(a.secrets, header, body, now)
}

// Parse names the notification by its event_id and event_type.
func (a *Adapter) Parse(body []byte) (billing.Event, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return billing.Event{}, billing.BadJSON(errors.New(billing.JSONProblem(err)))
	}
	if env.EventID == "" {
		return billing.Event{}, billing.BadEventID(errors.New(`the notification has no "event_id"`))
	}
	return billing.Event{ID: env.EventID, Type: env.EventType, Decoded: &env}, nil
}

// Read says which subscription a notification is about: the subscription events' own, a
// completed transaction's or a full refund's or chargeback's subscription_id. Everything
// else is stored and ignored.
func (a *Adapter) Read(ev billing.Event, body []byte) (billing.Reading, error) {
	env, _ := ev.Decoded.(*envelope)
	if env == nil { // a replay: the stored body
		env = &envelope{}
		if err := json.Unmarshal(body, env); err != nil {
			return billing.Reading{}, billing.Invalidf("paddle notification: %s", billing.JSONProblem(err))
		}
	}
	r := billing.Reading{Type: env.EventType, At: env.OccurredAt.UTC()}
	var d reading
	var err error
	switch {
	case strings.HasPrefix(env.EventType, "subscription."):
		err = decodeData(env, &d.sub)
		if err == nil {
			r.Subscription, r.Customer = d.sub.ID, d.sub.CustomerID
		}
	case env.EventType == "transaction.completed":
		if err = decodeData(env, &d.txn); err == nil && d.txn.SubscriptionID == "" {
			return billing.Reading{Ignore: "a Paddle transaction of no subscription"}, nil
		}
		if err == nil {
			r.Subscription, r.Customer = d.txn.SubscriptionID, d.txn.CustomerID
		}
	case env.EventType == "adjustment.created" || env.EventType == "adjustment.updated":
		if err = decodeData(env, &d.adjustment); err != nil {
			break
		}
		if ignore := ignoredAdjustment(d.adjustment); ignore != "" {
			return billing.Reading{Ignore: ignore}, nil
		}
		r.Subscription, r.Customer = d.adjustment.SubscriptionID, d.adjustment.CustomerID
	default:
		return billing.Reading{Ignore: "paddle event type ignored"}, nil
	}
	if err != nil {
		return billing.Reading{}, err
	}
	if r.Subscription == "" {
		return billing.Reading{}, billing.Invalidf("paddle %s: its data names no subscription", env.EventType)
	}
	r.Decoded = &d
	return r, nil
}

// ignoredAdjustment says why an adjustment changes nothing: only a full refund or
// chargeback of a subscription's transaction can take its period back.
func ignoredAdjustment(adj *adjustment) string {
	switch {
	case adj.Action != "refund" && adj.Action != "chargeback":
		return "a Paddle adjustment that is neither a refund nor a chargeback"
	case adj.Type == "partial":
		return "a partial Paddle refund: the period stays paid"
	case adj.SubscriptionID == "":
		return "a Paddle refund of no subscription"
	}
	return ""
}

func decodeData[T any](env *envelope, into **T) error {
	*into = new(T)
	if err := json.Unmarshal(env.Data, *into); err != nil {
		return billing.Invalidf("paddle %s data: %s", env.EventType, billing.JSONProblem(err))
	}
	return nil
}

// ReadSnapshot reads a subscription as GET /subscriptions lists it, at the time of the
// read.
func (a *Adapter) ReadSnapshot(raw []byte, at time.Time) (billing.Reading, billing.SnapshotInfo, error) {
	var sub subscription
	if err := json.Unmarshal(raw, &sub); err != nil || sub.ID == "" {
		return billing.Reading{}, billing.SnapshotInfo{}, errors.New("a Paddle subscription read without its id")
	}
	at = at.UTC()
	return billing.Reading{Subscription: sub.ID, Type: billing.SnapshotEventType, At: at, Snapshot: true, Customer: sub.CustomerID,
		Decoded: &reading{sub: &sub}}, billing.SnapshotInfo{Subscription: sub.ID, Customer: sub.CustomerID}, nil
}
