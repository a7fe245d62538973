// Package adapty is the mobile provider's adapter (Adapty, or any provider that shapes
// its events as Adapty does): it checks the shared Authorization secret, answers the
// provider's set-up request, names each event (synthesising an id where the provider
// sends none) and folds events into a subscription's canonical state.
package adapty

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// Adapter is the mobile provider's billing.Adapter.
type Adapter struct {
	secret string
	// aliases maps event types onto the handled ones (MOBILE_EVENT_ALIASES).
	aliases map[string]string
}

// New is the adapter checking the Authorization header against secret
// (MOBILE_WEBHOOK_SECRET), with aliases of event types.
func New(secret string, aliases map[string]string) *Adapter {
	return &Adapter{secret: secret, aliases: aliases}
}

func (a *Adapter) Provider() string { return billing.ProviderMobile }

// Verify compares the Authorization header with the shared secret in constant time.
// Hashing both first makes the comparison fixed-length, so not even the secret's length
// leaks.
func (a *Adapter) Verify(h http.Header, _ []byte, _ time.Time) error {
	header, err := billing.SingleHeader(h, "Authorization")
	if err != nil {
		return err
	}
	return verifyAuthorization(a.secret, header)
}

func verifyAuthorization(secret, header string) error {
	if secret == "" {
		return billing.ErrNoSecret
	}
	if header == "" {
		return billing.ErrSignatureMismatch
	}
	want := sha256.Sum256([]byte(secret))
	got := sha256.Sum256([]byte(header))
	if subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
		return billing.ErrSignatureMismatch
	}
	return nil
}

// Parse names the event; a body without event_type is the provider's set-up request,
// answered by echoing its check value as the provider expects, and recorded nowhere.
func (a *Adapter) Parse(body []byte) (billing.Event, error) {
	top, err := billing.DecodeTop(body)
	if err != nil {
		return billing.Event{}, billing.BadJSON(err)
	}
	if len(top["event_type"]) == 0 {
		resp := map[string]any{"received": true}
		if check, ok := top["adapty_check"]; ok {
			resp["adapty_check_response"] = check
		}
		return billing.Event{Answer: &billing.Answer{Outcome: "setup_check", Body: resp}}, nil
	}
	ev, err := envelope(top)
	if err != nil {
		return ev, billing.BadEventID(err)
	}
	return ev, nil
}

// reading is a decoded event and its type with aliases resolved.
type reading struct {
	event mobileEvent
	typ   string
}

func (a *Adapter) Read(_ billing.Event, body []byte) (billing.Reading, error) {
	ev, at, err := decodeMobileEvent(body)
	if err != nil {
		return billing.Reading{}, err
	}
	eventType := ev.EventType
	if handled, ok := a.aliases[eventType]; ok {
		eventType = handled
	}
	if _, ok := mobileRank[eventType]; !ok {
		return billing.Reading{Ignore: "webhook event type ignored"}, nil
	}
	key := ev.subscriptionKey()
	if key == "" {
		return billing.Reading{}, billing.Invalidf("mobile event has no transaction or profile id")
	}
	return billing.Reading{Subscription: key, Type: eventType, At: at, Customer: ev.ProfileID, Decoded: &reading{ev, eventType}}, nil
}

func (a *Adapter) Order(r billing.Reading, stored billing.Stored) billing.Order {
	return supersedes(r.Type, r.At, stored)
}

// Apply folds the event into the stored state.
func (a *Adapter) Apply(r billing.Reading, stored billing.Stored) ([]byte, any, error) {
	var current mobileState
	if stored.HasState() {
		if err := json.Unmarshal([]byte(stored.State), &current); err != nil {
			return nil, nil, err
		}
	}
	in := r.Decoded.(*reading)
	next, err := canonical(in.typ, in.event, r.At, current)
	if err != nil {
		return nil, nil, err
	}
	state, err := json.Marshal(next)
	return state, &next, err
}

func (a *Adapter) Facts(stored billing.Stored) (billing.Facts, error) {
	state, _ := stored.Decoded.(*mobileState)
	if state == nil {
		state = &mobileState{}
		if err := json.Unmarshal([]byte(stored.State), state); err != nil {
			return billing.Facts{}, err
		}
	}
	return billing.Facts{
		UserID:     state.CustomerUserID,
		Unresolved: billing.NewUnresolved("unresolved mobile customer", "customer_user_id", state.CustomerUserID, "profile_id", stored.Customer),
		Status:     state.Status, PeriodEnd: state.PeriodEnd, Products: []string{state.ProductID},
		Amount: state.Amount, Currency: state.Currency, Period: state.Period,
	}, nil
}
