package grants_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/audit"
	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/grant"
	"github.com/tollgate/tollgate/internal/billing/grants"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/playstore"
	"github.com/tollgate/tollgate/internal/billing/playstore/playstoretest"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

const (
	user    = "00000000-0000-4000-8000-00000000b001"
	another = "00000000-0000-4000-8000-00000000b002"
)

// withTeam is the harness's plans with team above pro, sold nowhere.
const withTeam = billingtest.PlansYAML + `  team:
    name: Team
    entitlements:
      - {name: projects, value: 100}
      - {name: exports, value: true}
`

// setUp is billing with grants as serve wires it, answers kept and changes recorded, and
// the plans of withTeam.
func setUp(t *testing.T, d *db.DB, opts ...billingtest.Option) (*billingtest.Harness, *grants.Grants) {
	t.Helper()
	h := billingtest.New(t, d, append(opts, billingtest.WithAdapters(grant.New()), billingtest.WithOutbound, billingtest.WithAnswers)...)
	list, err := plans.ParsePlans([]byte(withTeam))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Svc.SyncPlans(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	return h, grants.New(d, h.Svc.Pipeline, h.Log, h.Clock)
}

// change is an entitlements.changed event as recorded in the outbox.
type change struct {
	UserID  string
	Payload struct {
		Data struct {
			Previous billing.BillingView `json:"previous"`
			Current  billing.BillingView `json:"current"`
			Cause    billing.ChangeCause `json:"cause"`
		} `json:"data"`
	}
}

func changes(t *testing.T, h *billingtest.Harness) []change {
	t.Helper()
	rows, err := h.DB.Query("select user_id, payload from outbound_new_events where event_type = 'entitlements.changed' order by id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []change
	for rows.Next() {
		var c change
		var payload string
		if err := rows.Scan(&c.UserID, &payload); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(payload), &c.Payload); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func planOf(v billing.BillingView) string {
	if v.Plan == nil {
		return "none"
	}
	return v.Plan.Key
}

// A grant entitles at once and stops at its end by itself: the kept answer does not
// outlive it, no sweep needed; the sweep then records the end, announced once, its
// previous side the answer just before the end.
func TestAGrantEndsByItself(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h, g := setUp(t, d)
		ctx := context.Background()
		made, err := g.Add(ctx, grants.Request{UserID: user, Plan: "pro", For: 2 * time.Second, Reason: "bug #12", By: "ops@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		end := billingtest.Now.Add(2 * time.Second)
		if !made.Ends.Equal(end) || made.ID == "" || made.By != "ops@example.com" {
			t.Fatalf("made %+v", made)
		}
		if got := h.Answer(t, user); got != "true active pro "+billingtest.Stamp(end) {
			t.Fatalf("granted: %s", got)
		}
		v, err := h.Svc.View(ctx, user)
		if err != nil || *v.Provider != billing.ProviderGrant {
			t.Fatalf("provider %v, %v", v.Provider, err)
		}
		h.SetNow(end)
		if got := h.Answer(t, user); got != "false expired free "+billingtest.Stamp(end) {
			t.Fatalf("at its end, before any sweep: %s", got)
		}
		if n := len(changes(t, h)); n != 1 {
			t.Fatalf("%d changes before the sweep, want the grant's", n)
		}
		h.SetNow(end.Add(10 * time.Second))
		for range 2 { // the second finds nothing left to end
			if _, err := g.EndDue(ctx); err != nil {
				t.Fatal(err)
			}
		}
		got := changes(t, h)
		if len(got) != 2 {
			t.Fatalf("%d changes, want the start's and the end's", len(got))
		}
		start, ended := got[0].Payload.Data, got[1].Payload.Data
		if start.Previous.Subscribed || !start.Current.Subscribed || planOf(start.Current) != "pro" {
			t.Errorf("the start: %+v → %+v", start.Previous, start.Current)
		}
		if !ended.Previous.Subscribed || planOf(ended.Previous) != "pro" || ended.Current.Subscribed || planOf(ended.Current) != "free" ||
			ended.Cause.EventType != grant.EventEnded || *ended.Current.Status != billing.StatusExpired {
			t.Errorf("the end: %+v → %+v by %+v", ended.Previous, ended.Current, ended.Cause)
		}
		list, err := g.List(ctx, user)
		if err != nil || len(list) != 1 || !list[0].EndRecorded || list[0].Status(h.Clock()) != billing.StatusExpired {
			t.Fatalf("list %+v, %v", list, err)
		}
	})
}

// Two instances sweeping at once record a grant's end once: one delivery.
func TestTwoSweepersEndAGrantOnce(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h, first := setUp(t, d)
		other, _ := setUp(t, d) // another instance: its own pipeline over the same database
		second := grants.New(d, other.Svc.Pipeline, other.Log, h.Clock)
		ctx := context.Background()
		if _, err := first.Add(ctx, grants.Request{UserID: user, Plan: "team", For: time.Minute, Reason: "partner", By: "cli:ops"}); err != nil {
			t.Fatal(err)
		}
		h.SetNow(billingtest.Now.Add(2 * time.Minute))
		other.SetNow(h.Clock())
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, g := range []*grants.Grants{first, second} {
			wg.Go(func() { _, errs[i] = g.EndDue(ctx) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if got := changes(t, h); len(got) != 2 || got[1].Payload.Data.Cause.EventType != grant.EventEnded {
			t.Fatalf("changes %+v, want the start's and one end's", got)
		}
	})
}

// A grant above a store's plan wins while it lasts; when it ends, or is revoked, the
// store's answer returns. A grant never touches the store's subscription. Each grant and
// revocation is in the audit log with its actor.
func TestAGrantAboveAStoreSubscription(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		google := playstoretest.Start(t)
		h, g := setUp(t, d, billingtest.WithPlayStore(t, google))
		ctx := context.Background()
		paid := billingtest.Now.Add(30 * 24 * time.Hour)
		google.SetPurchase("tok-grant", billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", "", paid, "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"))
		proof := billing.Proof{PurchaseToken: "tok-grant", ProductID: "com.example.app.pro.monthly"}
		if err := h.Svc.Claim(ctx, playstore.Provider, proof, user); err != nil {
			t.Fatal(err)
		}
		store := "true active pro " + billingtest.Stamp(paid)
		play := *h.Canonical(playstore.Provider, "tok-grant")

		hour := billingtest.Now.Add(time.Hour)
		if _, err := g.Add(ctx, grants.Request{UserID: user, Plan: "team", Until: hour, Reason: "outage", By: "key:support"}); err != nil {
			t.Fatal(err)
		}
		if got := h.Answer(t, user); got != "true active team "+billingtest.Stamp(hour) {
			t.Fatalf("granted: %s", got)
		}
		h.SetNow(hour)
		if got := h.Answer(t, user); got != store {
			t.Fatalf("at the grant's end: %s, want the store's %s", got, store)
		}

		h.SetNow(hour.Add(time.Minute))
		second, err := g.Add(ctx, grants.Request{UserID: user, Plan: "team", For: 24 * time.Hour, Reason: "beta", By: "ops@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Revoke(ctx, another, second.ID, "wrong user", "ops@example.com"); !errors.Is(err, billing.ErrNoGrant) {
			t.Fatalf("revoking through another user: %v", err)
		}
		revoked, err := g.Revoke(ctx, user, second.ID, "beta over", "ops@example.com")
		if err != nil || revoked.Revoked == nil || revoked.RevokeReason != "beta over" || !revoked.End().Equal(h.Clock()) {
			t.Fatalf("revoked %+v, %v", revoked, err)
		}
		if got := h.Answer(t, user); got != store {
			t.Fatalf("revoked: %s, want the store's %s", got, store)
		}
		if _, err := g.Revoke(ctx, user, second.ID, "again", "ops@example.com"); !errors.Is(err, billing.ErrGrantEnded) {
			t.Fatalf("revoking twice: %v", err)
		}
		if got := *h.Canonical(playstore.Provider, "tok-grant"); !reflect.DeepEqual(got, play) {
			t.Fatalf("the store's row moved: %+v, was %+v", got, play)
		}
		entries, err := audit.List(ctx, d, audit.Filter{UserID: user})
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, e := range entries {
			actions = append(actions, e.Action+" by "+e.Actor)
		}
		if want := "[revoke by ops@example.com grant by ops@example.com grant by key:support]"; fmt.Sprint(actions) != want {
			t.Fatalf("audit %v, want %s", actions, want)
		}
	})
}

// What cannot be granted is refused, each with its own error, and nothing is made.
func TestGrantRequestsRefused(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h, g := setUp(t, d)
		ctx := context.Background()
		ok := grants.Request{UserID: user, Plan: "pro", For: time.Hour, Reason: "why", By: "cli:ops"}
		for _, c := range []struct {
			name string
			edit func(r *grants.Request)
			want error
		}{
			{"unknown plan", func(r *grants.Request) { r.Plan = "platinum" }, billing.ErrGrantPlan},
			{"end in the past", func(r *grants.Request) { r.For, r.Until = 0, billingtest.Now.Add(-time.Second) }, billing.ErrGrantEnd},
			{"end now", func(r *grants.Request) { r.For, r.Until = 0, billingtest.Now }, billing.ErrGrantEnd},
			{"no end", func(r *grants.Request) { r.For = 0 }, billing.ErrGrantLength},
			{"two ends", func(r *grants.Request) { r.Until = billingtest.Now.Add(time.Hour) }, billing.ErrGrantLength},
			{"no reason", func(r *grants.Request) { r.Reason = "" }, billing.ErrGrantReason},
			{"blank reason", func(r *grants.Request) { r.Reason = " \t" }, billing.ErrGrantReason},
			{"not a user id", func(r *grants.Request) { r.UserID = "alice" }, billing.ErrGrantUser},
			{"a NUL in the plan", func(r *grants.Request) { r.Plan = "pro\x00" }, billing.ErrGrantText},
			{"a NUL in the reason", func(r *grants.Request) { r.Reason = "wh\x00y" }, billing.ErrGrantText},
			{"longer than the ceiling", func(r *grants.Request) { r.For = billing.MaxDuration + time.Second }, billing.ErrGrantDuration},
			{"an end past the ceiling", func(r *grants.Request) { r.For, r.Until = 0, billingtest.Now.Add(billing.MaxDuration+time.Hour) }, billing.ErrGrantDuration},
		} {
			r := ok
			c.edit(&r)
			if _, err := g.Add(ctx, r); !errors.Is(err, c.want) || billing.KindOf(err) != billing.KindInvalid {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		}
		if n := h.CountEvents(); n != 0 {
			t.Fatalf("%d events stored by refused grants", n)
		}
		if _, err := g.Revoke(ctx, "", "00000000-0000-4000-8000-0000000000ff", "why", "cli:ops"); !errors.Is(err, billing.ErrNoGrant) {
			t.Fatalf("revoking no grant: %v", err)
		}
		if _, err := g.Add(ctx, ok); err != nil {
			t.Fatalf("the request itself: %v", err)
		}
	})
}

// TestConcurrentRevocationsKeepTheWinnersReason: of revocations of one grant at the same
// moment, one is answered and the others find it ended; the stored grant.revoked event,
// the grant and the audit log carry the reason of the one answered.
func TestConcurrentRevocationsKeepTheWinnersReason(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		_, g := setUp(t, d)
		ctx := context.Background()
		made, err := g.Add(ctx, grants.Request{UserID: user, Plan: "pro", For: time.Hour, Reason: "beta", By: "cli:ops"})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var won []string
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				reason := fmt.Sprint("reason ", i)
				_, err := g.Revoke(ctx, user, made.ID, reason, "cli:ops")
				switch {
				case err == nil:
					mu.Lock()
					won = append(won, reason)
					mu.Unlock()
				case !errors.Is(err, billing.ErrGrantEnded):
					t.Errorf("revocation %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		if len(won) != 1 {
			t.Fatalf("%d revocations answered, want one: %v", len(won), won)
		}
		var payload []byte
		if err := d.QueryRow("select payload from provider_events where provider_event_id = $1", made.ID+".revoked").Scan(&payload); err != nil {
			t.Fatal(err)
		}
		var stored struct {
			Grant billing.Grant `json:"grant"`
		}
		if err := json.Unmarshal(payload, &stored); err != nil || stored.Grant.RevokeReason != won[0] {
			t.Fatalf("the stored revocation says %q (%v), the one answered %q", stored.Grant.RevokeReason, err, won[0])
		}
		if got, err := g.Get(ctx, user, made.ID); err != nil || got.RevokeReason != won[0] {
			t.Fatalf("the grant says %q (%v), want %q", got.RevokeReason, err, won[0])
		}
	})
}
