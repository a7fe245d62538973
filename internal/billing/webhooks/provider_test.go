package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// acme is a made-up store, defined only here, to show that a provider is one package: it
// signs with an HMAC of the body in Acme-Signature, sends {"ping":true} to check the
// endpoint, names its events "event", and sells the app's products.
type acme struct{ secret string }

const acmeSecret = "acme-secret"

type acmeEvent struct {
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

func acmeSign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

func (a acme) Provider() string { return "acme" }

func (a acme) Verify(h http.Header, body []byte, _ time.Time) error {
	got, err := billing.SingleHeader(h, "Acme-Signature")
	if err != nil {
		return err
	}
	if !hmac.Equal([]byte(got), []byte(acmeSign(a.secret, body))) {
		return billing.ErrSignatureMismatch
	}
	return nil
}

func (a acme) Parse(body []byte) (billing.Event, error) {
	var ev acmeEvent
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

func (a acme) Read(e billing.Event, body []byte) (billing.Reading, error) {
	ev, _ := e.Decoded.(*acmeEvent)
	if ev == nil { // a replay: the stored body
		ev = &acmeEvent{}
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

func (a acme) Order(r billing.Reading, stored billing.Stored) billing.Order {
	o, _ := billing.ByTime(r.At, stored) // at the same instant the later arrival wins
	return o
}

func (a acme) Apply(r billing.Reading, _ billing.Stored) ([]byte, any, error) {
	ev := r.Decoded.(*acmeEvent)
	state := acmeState{Status: billing.StatusActive, Until: ev.Until, User: ev.User, Product: ev.Product}
	if ev.Kind == "lapsed" {
		state.Status, state.Until = billing.StatusExpired, ev.At
	}
	raw, err := json.Marshal(state)
	return raw, &state, err
}

func (a acme) Facts(stored billing.Stored) (billing.Facts, error) {
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

func (h *harness) sendAcme(ev acmeEvent, secret string) (int, http.Header) {
	body, err := json.Marshal(ev)
	if err != nil {
		h.t.Fatal(err)
	}
	rec := h.post("/billing/webhooks/acme", body, http.Header{"Acme-Signature": {acmeSign(secret, body)}})
	return rec.Code, rec.Header()
}

// A provider that exists only in this file is given a route, verified by its own scheme,
// and its events are stored, ordered, deduplicated, answered and replayed by the pipeline
// every provider goes through.
func TestAProviderIsOneAdapter(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := newHarness(t, d, func(o *options) { o.extra = append(o.extra, acme{acmeSecret}) })
		ctx := context.Background()
		const user = "7a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d"
		t1 := fixtureNow.Add(-time.Hour)
		started := acmeEvent{Event: "acme_1", Kind: "started", At: t1, Subscription: "acme_sub", User: user,
			Product: "com.example.app.pro.monthly", Until: t1.Add(30 * 24 * time.Hour)}
		renewed := started
		renewed.Event, renewed.Kind, renewed.At = "acme_2", "renewed", t1.Add(10*time.Minute)
		lapsed := started
		lapsed.Event, lapsed.Kind, lapsed.At = "acme_3", "lapsed", t1.Add(20*time.Minute)

		if code, header := h.sendAcme(acmeEvent{Ping: true}, acmeSecret); code != http.StatusOK || header.Get(HeaderOutcome) != "ping" {
			t.Fatalf("ping: %d %q", code, header.Get(HeaderOutcome))
		}
		if code, _ := h.sendAcme(started, "a forger's secret"); code != http.StatusUnauthorized {
			t.Fatalf("a bad signature answered %d", code)
		}
		if n := h.countEvents(); n != 0 {
			t.Fatalf("%d events stored by a ping and a forgery", n)
		}

		send := func(ev acmeEvent, want string) {
			t.Helper()
			code, header := h.sendAcme(ev, acmeSecret)
			if code != http.StatusOK || header.Get(HeaderOutcome) != want {
				t.Fatalf("%s: %d %q, want 200 %q", ev.Event, code, header.Get(HeaderOutcome), want)
			}
		}
		view := func() string {
			t.Helper()
			v, err := h.svc.View(ctx, user)
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf("%t %s %s %s", v.Subscribed, *v.Provider, *v.Status, v.Plan.Key)
		}
		send(started, billing.OutcomeApplied)
		if got := view(); got != "true acme active pro" {
			t.Fatalf("after started: %s", got)
		}
		send(lapsed, billing.OutcomeApplied)
		send(renewed, billing.OutcomeStale) // older than the lapse: it changes nothing
		send(lapsed, billing.OutcomeDuplicate)
		send(acmeEvent{Event: "acme_4", Kind: "audited", At: t1, Subscription: "acme_sub"}, billing.OutcomeIgnored)
		if got := view(); got != "false acme expired free" {
			t.Fatalf("after the lapse: %s", got)
		}
		if n := h.countEvents(); n != 4 {
			t.Fatalf("%d events stored, want 4 (the duplicate is one)", n)
		}
		outcomes := map[string]string{}
		if _, err := h.svc.Replay(ctx, pipeline.ReplayFilter{Provider: "acme"}, func(_, id, outcome string) { outcomes[id] = outcome }); err != nil {
			t.Fatal(err)
		}
		if want := "map[acme_1:stale acme_2:stale acme_3:duplicate acme_4:ignored]"; fmt.Sprint(outcomes) != want {
			t.Fatalf("replay: %v, want %s", outcomes, want)
		}
		if got := view(); got != "false acme expired free" {
			t.Fatalf("after the replay: %s", got)
		}
	})
}
