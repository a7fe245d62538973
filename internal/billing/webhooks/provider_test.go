package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/webhooks"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// A provider that exists only in this file is given a route, verified by its own scheme,
// and its events are stored, ordered, deduplicated, answered and replayed by the pipeline
// every provider goes through.
func TestAProviderIsOneAdapter(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d, func(o *billingtest.Options) {
			o.Extra = append(o.Extra, billingtest.Acme{Secret: billingtest.AcmeSecret})
		})
		ctx := context.Background()
		const user = "7a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d"
		t1 := billingtest.Now.Add(-time.Hour)
		started := billingtest.AcmeEvent{Event: "acme_1", Kind: "started", At: t1, Subscription: "acme_sub", User: user,
			Product: "com.example.app.pro.monthly", Until: t1.Add(30 * 24 * time.Hour)}
		renewed := started
		renewed.Event, renewed.Kind, renewed.At = "acme_2", "renewed", t1.Add(10*time.Minute)
		lapsed := started
		lapsed.Event, lapsed.Kind, lapsed.At = "acme_3", "lapsed", t1.Add(20*time.Minute)

		if code, header := h.SendAcme(billingtest.AcmeEvent{Ping: true}, billingtest.AcmeSecret); code != http.StatusOK || header.Get(webhooks.HeaderOutcome) != "ping" {
			t.Fatalf("ping: %d %q", code, header.Get(webhooks.HeaderOutcome))
		}
		if code, _ := h.SendAcme(started, "a forger's secret"); code != http.StatusUnauthorized {
			t.Fatalf("a bad signature answered %d", code)
		}
		if n := h.CountEvents(); n != 0 {
			t.Fatalf("%d events stored by a ping and a forgery", n)
		}

		send := func(ev billingtest.AcmeEvent, want string) {
			t.Helper()
			code, header := h.SendAcme(ev, billingtest.AcmeSecret)
			if code != http.StatusOK || header.Get(webhooks.HeaderOutcome) != want {
				t.Fatalf("%s: %d %q, want 200 %q", ev.Event, code, header.Get(webhooks.HeaderOutcome), want)
			}
		}
		view := func() string {
			t.Helper()
			v, err := h.Svc.View(ctx, user)
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
		send(billingtest.AcmeEvent{Event: "acme_4", Kind: "audited", At: t1, Subscription: "acme_sub"}, billing.OutcomeIgnored)
		if got := view(); got != "false acme expired free" {
			t.Fatalf("after the lapse: %s", got)
		}
		if n := h.CountEvents(); n != 4 {
			t.Fatalf("%d events stored, want 4 (the duplicate is one)", n)
		}
		outcomes := map[string]string{}
		if _, err := h.Svc.Replay(ctx, pipeline.ReplayFilter{Provider: "acme"}, func(_, id, outcome string) { outcomes[id] = outcome }); err != nil {
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
