package billingtest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// Acme is a made-up store, defined only in this kit, to show that a provider is one package: it
// signs with an HMAC of the body in Acme-Signature, sends {"ping":true} to check the
// endpoint, names its events "event", and sells the app's products.
type Acme struct{ Secret string }

const AcmeSecret = "acme-secret"

type AcmeEvent struct {
	Event        string    `json:"event"`
	Kind         string    `json:"kind"`
	At           time.Time `json:"at"`
	Subscription string    `json:"subscription"`
	User         string    `json:"user"`
	Product      string    `json:"product"`
	Until        time.Time `json:"until"`
	Ping         bool      `json:"ping"`
}

type acmeState struct {
	Status  string    `json:"status"`
	Until   time.Time `json:"until"`
	User    string    `json:"user"`
	Product string    `json:"product"`
}

// AcmeSign is the Acme-Signature of body.
func AcmeSign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

func (a Acme) Provider() string { return "acme" }

func (a Acme) Verify(h http.Header, body []byte, _ time.Time) error {
	got, err := billing.SingleHeader(h, "Acme-Signature")
	if err != nil {
		return err
	}
	if !hmac.Equal([]byte(got), []byte(AcmeSign(a.Secret, body))) {
		return billing.ErrSignatureMismatch
	}
	return nil
}

func (a Acme) Parse(body []byte) (billing.Event, error) {
	var ev AcmeEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return billing.Event{}, billing.BadJSON(billing.ErrNotObject)
	}
	if ev.Ping {
		return billing.Event{Answer: &billing.Answer{Outcome: "ping", Body: map[string]bool{"pong": true}}}, nil
	}
	if ev.Event == "" {
		return billing.Event{}, billing.BadEventID(errors.New(`the event has no "event"`))
	}
	return billing.Event{ID: ev.Event, Type: ev.Kind, Decoded: &ev}, nil
}

func (a Acme) Read(e billing.Event, body []byte) (billing.Reading, error) {
	ev, _ := e.Decoded.(*AcmeEvent)
	if ev == nil { // a replay: the stored body
		ev = &AcmeEvent{}
		if err := json.Unmarshal(body, ev); err != nil {
			return billing.Reading{}, billing.Invalidf("acme event: %v", billing.JSONProblem(err))
		}
	}
	switch ev.Kind {
	case "started", "renewed", "lapsed":
		return billing.Reading{Subscription: ev.Subscription, Type: ev.Kind, At: ev.At, Decoded: ev}, nil
	}
	return billing.Reading{Ignore: "acme event kind ignored"}, nil
}

func (a Acme) Order(r billing.Reading, stored billing.Stored) billing.Order {
	o, _ := billing.ByTime(r.At, stored) // at the same instant the later arrival wins
	return o
}

func (a Acme) Apply(r billing.Reading, _ billing.Stored) ([]byte, any, error) {
	ev := r.Decoded.(*AcmeEvent)
	state := acmeState{Status: billing.StatusActive, Until: ev.Until, User: ev.User, Product: ev.Product}
	if ev.Kind == "lapsed" {
		state.Status, state.Until = billing.StatusExpired, ev.At
	}
	raw, err := json.Marshal(state)
	return raw, &state, err
}

func (a Acme) Facts(stored billing.Stored) (billing.Facts, error) {
	state, _ := stored.Decoded.(*acmeState)
	if state == nil {
		state = &acmeState{}
		if err := json.Unmarshal([]byte(stored.State), state); err != nil {
			return billing.Facts{}, err
		}
	}
	return billing.Facts{
		UserID: state.User, Unresolved: billing.NewUnresolved("unresolved acme user", "user", state.User),
		Status: state.Status, PeriodEnd: &state.Until, Products: []string{state.Product}, PriceList: billing.ProviderMobile,
	}, nil
}

// ReadSnapshot reads an Acme subscription as Acme's (made-up) API answers for it: an
// AcmeEvent whose kind says its state at the read ("started" or "lapsed").
func (a Acme) ReadSnapshot(raw []byte, at time.Time) (billing.Reading, billing.SnapshotInfo, error) {
	var ev AcmeEvent
	if err := json.Unmarshal(raw, &ev); err != nil || ev.Subscription == "" {
		return billing.Reading{}, billing.SnapshotInfo{}, errors.New("an acme subscription read without its subscription")
	}
	at = at.UTC()
	return billing.Reading{Subscription: ev.Subscription, Type: billing.SnapshotEventType, At: at, Snapshot: true, Decoded: &ev},
		billing.SnapshotInfo{Subscription: ev.Subscription}, nil
}

// SendAcme delivers ev to the acme route, signed with secret.
func (h *Harness) SendAcme(ev AcmeEvent, secret string) (int, http.Header) {
	body, err := json.Marshal(ev)
	if err != nil {
		h.T.Fatal(err)
	}
	rec := h.Post("/billing/webhooks/acme", body, http.Header{"Acme-Signature": {AcmeSign(secret, body)}})
	return rec.Code, rec.Header()
}
