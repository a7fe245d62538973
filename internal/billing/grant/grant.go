// Package grant is the adapter of grants: one plan given by hand to one user until an
// end, sold by no store. A grant's life is three events tollgate makes itself, never
// receives: granted, revoked (it ends at once) and ended (its end passed). Each is stored
// and applied by the pipeline like a store's event, so a grant is a canonical
// subscription of provider "grant" that every answer, the console and the outbound
// webhooks see, and its end is an entitlement change like any other.
//
// Each event carries the whole grant, so any one of them read alone says what the grant
// is; stored, they fold: a revocation is kept from the first that came, an end once
// recorded stays.
package grant

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// The events of a grant's life.
const (
	EventGranted = "grant.created"
	EventRevoked = "grant.revoked"
	EventEnded   = "grant.ended"
)

// body is an event's body: its type, when it happened, and the grant as that event
// leaves it.
type body struct {
	Type  string        `json:"type"`
	At    time.Time     `json:"at"`
	Grant billing.Grant `json:"grant"`
}

// Event is the event of type typ (EventGranted, …) of g at at, as the pipeline ingests it:
// its id names the grant and the step, so that one step is stored once however many
// instances record it.
func Event(typ string, g billing.Grant, at time.Time) (billing.Event, []byte, error) {
	raw, err := json.Marshal(body{Type: typ, At: at.UTC(), Grant: g})
	if err != nil {
		return billing.Event{}, nil, err
	}
	return billing.Event{ID: g.ID + "." + strings.TrimPrefix(typ, "grant."), Type: typ}, raw, nil
}

// Adapter is the grant provider's adapter.
type Adapter struct{}

// New is the grant adapter.
func New() Adapter { return Adapter{} }

// Provider is billing.ProviderGrant.
func (Adapter) Provider() string { return billing.ProviderGrant }

// errNotReceived: grants are made by tollgate, never received from outside.
var errNotReceived = errors.New("grants are made through tollgate, not received as webhooks")

// Verify refuses every request: no route receives grants.
func (Adapter) Verify(http.Header, []byte, time.Time) error { return errNotReceived }

// Parse names a grant's event.
func (Adapter) Parse(raw []byte) (billing.Event, error) {
	b, err := decode(raw)
	if err != nil {
		return billing.Event{}, err
	}
	ev, _, err := Event(b.Type, b.Grant, b.At)
	if err != nil {
		return billing.Event{}, billing.BadJSON(err)
	}
	ev.Decoded = b
	return ev, nil
}

func decode(raw []byte) (body, error) {
	var b body
	if err := json.Unmarshal(raw, &b); err != nil {
		return body{}, billing.BadJSON(err)
	}
	switch {
	case b.Type != EventGranted && b.Type != EventRevoked && b.Type != EventEnded:
		return body{}, billing.BadJSON(fmt.Errorf("not a grant's event: %q", b.Type))
	case b.Grant.ID == "" || b.At.IsZero():
		return body{}, billing.BadJSON(errors.New("a grant's event names its grant and its time"))
	}
	return b, nil
}

// Read says which grant the event is about and when it happened. The answer before a
// recorded end is the one just before the end itself.
func (Adapter) Read(ev billing.Event, raw []byte) (billing.Reading, error) {
	b, ok := ev.Decoded.(body)
	if !ok {
		var err error
		if b, err = decode(raw); err != nil {
			return billing.Reading{}, billing.Invalidf("%v", err)
		}
	}
	r := billing.Reading{Subscription: b.Grant.ID, Type: b.Type, At: b.At, Decoded: b}
	if b.Type == EventEnded {
		r.AnswerBefore = b.Grant.End().Add(-time.Nanosecond)
	}
	return r, nil
}

// Order: every step of a grant folds into what is stored (Apply), whichever came first.
func (Adapter) Order(billing.Reading, billing.Stored) billing.Order { return billing.Supersedes }

// Apply folds the event into the stored grant: the first revocation stands, and a
// recorded end stays recorded.
func (Adapter) Apply(r billing.Reading, stored billing.Stored) ([]byte, any, error) {
	b := r.Decoded.(body)
	g, err := billing.StoredState[billing.Grant](stored)
	if err != nil {
		return nil, nil, err
	}
	if g.ID == "" {
		g = b.Grant
		g.Revoked, g.RevokedBy, g.RevokeReason, g.EndRecorded = nil, "", "", false
	}
	switch b.Type {
	case EventRevoked:
		if g.Revoked == nil {
			at := b.At
			g.Revoked, g.RevokedBy, g.RevokeReason = &at, b.Grant.RevokedBy, b.Grant.RevokeReason
		}
	case EventEnded:
		g.EndRecorded = true
	}
	state, err := json.Marshal(g)
	return state, &g, err
}

// Facts: the grant's user has its plan, by key, active until its end.
func (Adapter) Facts(stored billing.Stored) (billing.Facts, error) {
	g, err := billing.StoredState[billing.Grant](stored)
	if err != nil {
		return billing.Facts{}, err
	}
	end, status := g.End(), billing.StatusActive
	if g.Ended() {
		status = billing.StatusExpired
	}
	return billing.Facts{UserID: g.UserID, KeepsUser: true, PlanKey: g.Plan, PeriodEnd: &end, Status: status}, nil
}
