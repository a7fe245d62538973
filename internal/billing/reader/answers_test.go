package reader_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// TestAnswersAreKeptUntilTheyMayChange: a user's answer is read once and kept; this
// instance's webhooks, usage and plans syncs drop it at once, a period's end and the
// maximum age drop it on time, and a write behind tollgate's back is seen at the latest
// when the answer expires.
func TestAnswersAreKeptUntilTheyMayChange(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d, billingtest.WithAnswers)
		ctx := context.Background()
		view := func() billing.BillingView {
			t.Helper()
			v, err := h.Svc.View(ctx, billingtest.FixtureUser)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		if v := view(); v.Subscribed || v.Usage["projects"].Used != 0 {
			t.Fatalf("a new user: %+v", v)
		}
		// Behind tollgate's back: the kept answer stands until it expires.
		if _, err := d.Exec("insert into usage_counters (user_id, name, period_end, used, created_at, updated_at) values ($1, 'projects', $2, 1, $3, $3)",
			billingtest.FixtureUser, billing.MonthEnd(billingtest.Now), billingtest.Now); err != nil {
			t.Fatal(err)
		}
		if v := view(); v.Usage["projects"].Used != 0 {
			t.Fatalf("the answer was read again: used %d", v.Usage["projects"].Used)
		}
		h.SetNow(billingtest.Now.Add(time.Minute))
		if v := view(); v.Usage["projects"].Used != 1 {
			t.Fatalf("after the maximum age: used %d, want 1", v.Usage["projects"].Used)
		}

		h.MustSend(billing.ProviderWeb, billingtest.Fixture(t, "web/customer.subscription.updated.json"))
		v := view()
		if !v.Subscribed || v.Plan.Key != "pro" {
			t.Fatalf("right after a webhook: %+v", v)
		}
		// The pro period counts anew.
		if _, err := h.Svc.RecordUsage(ctx, billingtest.FixtureUser, "projects", 3); err != nil {
			t.Fatal(err)
		}
		if got := view().Usage["projects"].Used; got != 3 {
			t.Fatalf("right after recording usage: used %d, want 3", got)
		}

		if got := view().Entitlements["projects"]; got != int64(10) {
			t.Fatalf("pro's projects: %v, want 10", got)
		}
		plans, err := plans.ParsePlans([]byte(strings.Replace(billingtest.PlansYAML, "{name: projects, value: 10}", "{name: projects, value: 25}", 1)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Svc.SyncPlans(ctx, plans); err != nil {
			t.Fatal(err)
		}
		if got := view().Entitlements["projects"]; got != int64(25) {
			t.Fatalf("right after a plans sync: projects %v, want 25", got)
		}

		// The subscription's period ends on 2026-11-01 12:00: the answer is not kept past it.
		h.SetNow(time.Date(2026, 11, 1, 11, 59, 30, 0, time.UTC))
		if !view().Subscribed {
			t.Fatal("before the period's end: not subscribed")
		}
		h.SetNow(time.Date(2026, 11, 1, 12, 0, 1, 0, time.UTC))
		if v := view(); v.Subscribed {
			t.Fatalf("after the period's end, with no event: still subscribed: %+v", v)
		}
	})
}

// TestAnotherInstancesWebhookChangesThisOnesAnswerWithinASecond: two instances on one
// Postgres; the one that keeps the answer is told of the other's webhook by notification.
func TestAnotherInstancesWebhookChangesThisOnesAnswerWithinASecond(t *testing.T) {
	url := dbtest.PostgresURL(t)
	writer := billingtest.New(t, dbtest.Open(t, url))
	reader := billingtest.New(t, dbtest.Open(t, url), billingtest.WithAnswers)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go reader.Svc.ListenForChanges(ctx)

	subscribed := func() bool {
		v, err := reader.Svc.View(ctx, billingtest.FixtureUser)
		if err != nil {
			t.Fatal(err)
		}
		return v.Subscribed
	}
	if subscribed() {
		t.Fatal("subscribed before any event")
	}
	time.Sleep(100 * time.Millisecond) // the listener is connected by now; if not, it starts afresh anyway
	writer.MustSend(billing.ProviderWeb, billingtest.Fixture(t, "web/customer.subscription.updated.json"))
	sent := time.Now()
	for !subscribed() {
		if time.Since(sent) > time.Second {
			t.Fatal("the other instance's answer did not change within a second")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("seen after %v", time.Since(sent))
}

// TestAKeptAnswerIsTheAnswer: the one-statement read behind kept answers gives what the
// uncached reads give, across subscriptions of both providers and usage, and so does the
// encoding kept with it.
func TestAKeptAnswerIsTheAnswer(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		kept := billingtest.New(t, d, billingtest.WithAnswers)
		plain := billingtest.New(t, d)
		ctx := context.Background()
		same := func(when string) {
			t.Helper()
			a, err := kept.Svc.View(ctx, billingtest.FixtureUser)
			if err != nil {
				t.Fatal(err)
			}
			b, err := plain.Svc.View(ctx, billingtest.FixtureUser)
			if err != nil {
				t.Fatal(err)
			}
			if billingtest.JSON(t, a) != billingtest.JSON(t, b) {
				t.Fatalf("%s: kept %s, read %s", when, billingtest.JSON(t, a), billingtest.JSON(t, b))
			}
			// The encoding kept with the answer is the view's, as read anew.
			keptJSON, err := kept.Svc.ViewJSON(ctx, billingtest.FixtureUser)
			if err != nil {
				t.Fatal(err)
			}
			readJSON, err := plain.Svc.ViewJSON(ctx, billingtest.FixtureUser)
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := billing.EncodeView(b); string(keptJSON) != string(want) || string(readJSON) != string(want) {
				t.Fatalf("%s: ViewJSON kept %s, read %s; want %s", when, keptJSON, readJSON, want)
			}
		}
		same("a new user")
		if _, err := kept.Svc.RecordUsage(ctx, billingtest.FixtureUser, "projects", 1); err != nil {
			t.Fatal(err)
		}
		same("with usage under the default plan")
		kept.MustSend(billing.ProviderWeb, billingtest.Fixture(t, "web/customer.subscription.updated.json"))
		if _, err := kept.Svc.RecordUsage(ctx, billingtest.FixtureUser, "projects", 4); err != nil {
			t.Fatal(err)
		}
		same("a web subscription and its period's usage")
		kept.MustSend(billing.ProviderMobile, billingtest.Edit(t, billingtest.Fixture(t, "mobile/subscription_started.json"), func(m map[string]any) {
			m["customer_user_id"] = billingtest.FixtureUser
		}))
		same("and a mobile one")
	})
}
