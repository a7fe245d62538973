package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// recordedEvent is an outbox row as a receiver would get it.
type recordedEvent struct {
	UserID, EventType string
	Body              decodedChange
	Raw               map[string]any
}

// decodedChange is an entitlements.changed body as a receiver decodes it.
type decodedChange struct {
	Type      string            `json:"type"`
	Timestamp string            `json:"timestamp"`
	Data      decodedChangeData `json:"data"`
}

type decodedChangeData struct {
	UserID   string              `json:"user_id"`
	Previous billing.BillingView `json:"previous"`
	Current  billing.BillingView `json:"current"`
	Cause    billing.ChangeCause `json:"cause"`
}

// outbox is every recorded event, in order: where ingestion records them, since no
// deliverer runs here to move them.
func outbox(h *billingtest.Harness) []recordedEvent {
	h.T.Helper()
	rows, err := h.DB.Query("select user_id, event_type, payload from outbound_new_events order by id")
	if err != nil {
		h.T.Fatal(err)
	}
	defer rows.Close()
	var out []recordedEvent
	for rows.Next() {
		var e recordedEvent
		var payload string
		if err := rows.Scan(&e.UserID, &e.EventType, &payload); err != nil {
			h.T.Fatal(err)
		}
		if err := json.Unmarshal([]byte(payload), &e.Body); err != nil {
			h.T.Fatal(err)
		}
		if err := json.Unmarshal([]byte(payload), &e.Raw); err != nil {
			h.T.Fatal(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		h.T.Fatal(err)
	}
	return out
}

// TestEveryChangeOfABillingAnswerIsRecordedOnce: each event that moves a user's answer adds
// one entitlements.changed event whose current side is what /api/v1/me says right after,
// and whose previous side is the answer before; events that move nothing add none.
func TestEveryChangeOfABillingAnswerIsRecordedOnce(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d, billingtest.WithOutbound)
		ctx := context.Background()
		before, err := h.Svc.View(ctx, billingtest.FixtureUser)
		if err != nil {
			t.Fatal(err)
		}
		// expect sends an event and checks how many changes the outbox then holds. A new
		// one must continue from the answer before and end at /me's answer now; without
		// one, /me's answer must not have moved.
		expect := func(what, provider string, body []byte, want int) {
			t.Helper()
			recorded := len(outbox(h))
			h.MustSend(provider, body)
			got := outbox(h)
			if len(got) != want {
				t.Fatalf("after %s: %d events recorded, want %d", what, len(got), want)
			}
			now, err := h.Svc.View(ctx, billingtest.FixtureUser)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == recorded {
				if billingtest.JSON(t, now) != billingtest.JSON(t, before) {
					t.Fatalf("after %s: the answer moved to %s and no change was recorded", what, billingtest.JSON(t, now))
				}
				return
			}
			last := got[len(got)-1].Body
			if billingtest.JSON(t, last.Data.Previous) != billingtest.JSON(t, before) || billingtest.JSON(t, last.Data.Current) != billingtest.JSON(t, now) {
				t.Fatalf("after %s: the newest change is\n %s -> %s\nwant\n %s -> %s", what,
					billingtest.JSON(t, last.Data.Previous), billingtest.JSON(t, last.Data.Current), billingtest.JSON(t, before), billingtest.JSON(t, now))
			}
			before = now
		}

		// Usage in the period each answer counts in, the free plan's month and then the
		// subscription's period: the views show it, read with the change.
		useProjects := func(n int64) {
			t.Helper()
			if _, err := h.Svc.RecordUsage(ctx, billingtest.FixtureUser, "projects", n); err != nil {
				t.Fatal(err)
			}
			if before, err = h.Svc.View(ctx, billingtest.FixtureUser); err != nil {
				t.Fatal(err)
			}
		}
		useProjects(1)

		updated := billingtest.Fixture(t, "web/customer.subscription.updated.json")
		expect("a new subscription", billing.ProviderWeb, updated, 1)
		useProjects(4)
		first := outbox(h)[0]
		if first.UserID != billingtest.FixtureUser || first.EventType != billing.EntitlementsChanged || first.Body.Type != billing.EntitlementsChanged ||
			first.Body.Timestamp != billingtest.Now.Format(time.RFC3339) || first.Body.Data.UserID != billingtest.FixtureUser {
			t.Errorf("first event: %+v", first)
		}
		if cause := first.Body.Data.Cause; cause != (billing.ChangeCause{Provider: billing.ProviderWeb, ProviderEventID: "evt_1TESTsubUpdated000000001", EventType: "customer.subscription.updated"}) {
			t.Errorf("cause %+v", cause)
		}
		data := first.Raw["data"].(map[string]any)
		previous, current := data["previous"].(map[string]any), data["current"].(map[string]any)
		if previous["subscribed"] != false || previous["plan"].(map[string]any)["key"] != "free" || previous["status"] != nil ||
			current["subscribed"] != true || current["plan"].(map[string]any)["key"] != "pro" || current["status"] != "active" ||
			current["provider"] != "web" || current["entitlements"].(map[string]any)["exports"] != true {
			t.Errorf("previous %v\ncurrent %v", previous, current)
		}

		expect("the same event again", billing.ProviderWeb, updated, 1)
		expect("an older event", billing.ProviderWeb, billingtest.Fixture(t, "web/customer.subscription.created.json"), 1)
		expect("an update that changes no answer", billing.ProviderWeb, billingtest.Edit(t, updated, func(m map[string]any) {
			m["id"], m["created"] = "evt_metadata", float64(billingtest.WebCreated+30)
			billingtest.Path(m, "data", "object")["metadata"].(map[string]any)["note"] = "hello"
		}), 1)
		expect("past due", billing.ProviderWeb, billingtest.Edit(t, updated, func(m map[string]any) {
			m["id"], m["created"] = "evt_past_due", float64(billingtest.WebCreated+60)
			billingtest.Path(m, "data", "object")["status"] = "past_due"
		}), 2)
		expect("an unresolved event", billing.ProviderWeb, billingtest.Edit(t, updated, func(m map[string]any) {
			m["id"], m["created"] = "evt_unmapped", float64(billingtest.WebCreated+120)
			billingtest.Path(billingtest.Path(m, "data", "object")["items"].(map[string]any)["data"].([]any)[0].(map[string]any), "price")["id"] = "price_nobody_sells"
		}), 2)
		expect("a mobile purchase", billing.ProviderMobile, billingtest.Fixture(t, "mobile/subscription_started.json"), 3)
		if cause := outbox(h)[2].Body.Data.Cause; cause.Provider != billing.ProviderMobile || cause.EventType != "subscription_started" || cause.ProviderEventID == "" {
			t.Errorf("mobile cause %+v", cause)
		}

		expect("the end of a subscription that does not govern the answer", billing.ProviderWeb, billingtest.Edit(t, updated, func(m map[string]any) {
			m["id"], m["created"], m["type"] = "evt_deleted", float64(billingtest.WebCreated+150), "customer.subscription.deleted"
			billingtest.Path(m, "data", "object")["status"] = "canceled"
		}), 3)
		if sub := h.Canonical(billing.ProviderWeb, "sub_1TESTa1B2c3D4e5F6g7H8i9"); sub == nil || sub.Status != billing.StatusExpired {
			t.Fatalf("the web subscription after its deletion: %+v, want expired", sub)
		}

		// A plans sync in between: the next change carries the new catalogue, as /me does.
		plans, err := plans.ParsePlans([]byte(strings.Replace(billingtest.PlansYAML, "{name: projects, value: 10}", "{name: projects, value: 25}", 1)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Svc.SyncPlans(ctx, plans); err != nil {
			t.Fatal(err)
		}
		if before, err = h.Svc.View(ctx, billingtest.FixtureUser); err != nil { // a sync is no event
			t.Fatal(err)
		}
		expect("a second mobile subscription after a plans sync", billing.ProviderMobile, billingtest.Edit(t, billingtest.Fixture(t, "mobile/subscription_renewed.android.json"), func(m map[string]any) {
			m["customer_user_id"] = billingtest.FixtureUser
		}), 4)
		if got := outbox(h)[3].Body.Data.Current.Entitlements["projects"]; got != float64(25) {
			t.Errorf("projects after the sync: %v, want 25", got)
		}

		n, err := h.Svc.Replay(ctx, pipeline.ReplayFilter{}, func(string, string, string) {})
		if err != nil || n != 8 {
			t.Fatalf("replay: %d, %v", n, err)
		}
		if got := len(outbox(h)); got != 4 {
			t.Errorf("a replay that changes nothing recorded %d events, want none", got-4)
		}
	})
}

// TestARolledBackChangeRecordsNoEvent: a database error after the change and its event
// were written (the last write of the transaction) rolls back both; the provider's retry
// then records it once. Both providers, each a new customer's subscription: on Postgres
// the change and its event are written by one statement.
func TestARolledBackChangeRecordsNoEvent(t *testing.T) {
	for _, provider := range []string{billing.ProviderWeb, billing.ProviderMobile} {
		t.Run(provider, func(t *testing.T) {
			dbtest.Engines(t, func(t *testing.T, d *db.DB) {
				h := billingtest.New(t, d, billingtest.WithOutbound)
				failing := map[db.Engine][]string{
					db.Postgres: {
						`create function fail_processing() returns trigger language plpgsql as $$ begin raise exception 'injected failure'; end $$`,
						`create trigger fail_processing after insert on outbound_new_events for each row execute function fail_processing()`,
					},
					db.SQLite: {`create trigger fail_processing after insert on outbound_new_events begin select raise(abort, 'injected failure'); end`},
				}
				for _, stmt := range failing[d.Engine] {
					if _, err := d.Exec(stmt); err != nil {
						t.Fatal(err)
					}
				}
				body, send := billingtest.Fixture(t, "web/customer.subscription.updated.json"), h.SendWeb
				if provider == billing.ProviderMobile {
					body, send = billingtest.Fixture(t, "mobile/subscription_started.json"), h.SendMobile
				}
				if rec := send(body); rec.Code < 500 {
					t.Fatalf("a delivery whose transaction failed: %d %s, want 5xx so the provider retries", rec.Code, rec.Body)
				}
				var subs int
				if err := d.QueryRow("select count(*) from subscriptions").Scan(&subs); err != nil {
					t.Fatal(err)
				}
				if got := len(outbox(h)); got != 0 || subs != 0 {
					t.Fatalf("after the rollback: %d events, %d subscriptions; want none", got, subs)
				}
				if _, err := d.Exec("drop trigger fail_processing" + map[db.Engine]string{db.Postgres: " on outbound_new_events"}[d.Engine]); err != nil {
					t.Fatal(err)
				}
				h.MustSend(provider, body)
				if got := outbox(h); len(got) != 1 || !got[0].Body.Data.Current.Subscribed || got[0].Body.Data.Cause.Provider != provider {
					t.Fatalf("after the retry: %v, want one change to subscribed, caused by %s", got, provider)
				}
			})
		})
	}
}

// TestNoOutboxWithoutOutboundWebhooks: with OUTBOUND_WEBHOOK_URL unset nothing is recorded,
// even while a hook listens.
func TestNoOutboxWithoutOutboundWebhooks(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		var calls []string
		h.Svc.OnBillingChange(func(_ context.Context, userID string) { calls = append(calls, userID) })
		h.MustSend(billing.ProviderWeb, billingtest.Fixture(t, "web/customer.subscription.updated.json"))
		if got := len(outbox(h)); got != 0 || fmt.Sprint(calls) != fmt.Sprint([]string{billingtest.FixtureUser}) {
			t.Fatalf("%d events recorded, hook calls %v", got, calls)
		}
	})
}

// TestASubscriptionThatMovesChangesBothUsers: a mobile subscription whose later event names
// another user leaves the first user's answer and joins the second's: two changes.
func TestASubscriptionThatMovesChangesBothUsers(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d, billingtest.WithOutbound)
		started := billingtest.Fixture(t, "mobile/subscription_started.json")
		h.MustSend(billing.ProviderMobile, started)
		const other = "11111111-2222-4333-8444-555555555555"
		h.MustSend(billing.ProviderMobile, billingtest.Edit(t, started, func(m map[string]any) {
			m["customer_user_id"], m["event_type"] = other, "subscription_renewed"
			m["event_datetime"] = "2026-10-01T12:05:00.000000+0000"
		}))
		got := outbox(h)
		if len(got) != 3 {
			t.Fatalf("%d events, want 3: gained, then lost by one user and gained by the other", len(got))
		}
		byUser := map[string]decodedChangeData{}
		for _, e := range got[1:] {
			byUser[e.UserID] = e.Body.Data
		}
		if lost := byUser[billingtest.FixtureUser]; !lost.Previous.Subscribed || lost.Current.Subscribed || lost.Current.Plan.Key != "free" {
			t.Errorf("the first user's change: %+v -> %+v", lost.Previous, lost.Current)
		}
		if gained := byUser[other]; gained.Previous.Subscribed || !gained.Current.Subscribed || gained.Current.Plan.Key != "pro" {
			t.Errorf("the second user's change: %+v -> %+v", gained.Previous, gained.Current)
		}
		for user, data := range byUser {
			now, err := h.Svc.View(context.Background(), user)
			if err != nil {
				t.Fatal(err)
			}
			if billingtest.JSON(t, now) != billingtest.JSON(t, data.Current) {
				t.Errorf("user %s: recorded %s, /me says %s", user, billingtest.JSON(t, data.Current), billingtest.JSON(t, now))
			}
		}
	})
}

// TestAWriteThatChangesNothingIsNotMade follows one mobile subscription through events that
// change its canonical row, one field at a time, and events that repeat it: each change is
// written (updated_at moves to its time), each repeat is not (updated_at stays), whether
// changes are watched (a hook, the outbox) or not, on both engines.
func TestAWriteThatChangesNothingIsNotMade(t *testing.T) {
	const other = "11111111-2222-4333-8444-555555555555"
	start := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	periodEnd := func(month time.Month) time.Time { return time.Date(2026, month, 1, 12, 0, 1, 0, time.UTC) }
	steps := []struct {
		what, eventType, user string
		expires               time.Time
		written               bool
		status                string
	}{
		{"a purchase", "subscription_started", billingtest.FixtureUser, periodEnd(11), true, billing.StatusActive},
		{"its access level, as it is", "access_level_updated", billingtest.FixtureUser, periodEnd(11), false, billing.StatusActive},
		{"a renewal: the period end moves", "subscription_renewed", billingtest.FixtureUser, periodEnd(12), true, billing.StatusActive},
		{"a cancellation: the status moves", "subscription_cancelled", billingtest.FixtureUser, periodEnd(12), true, billing.StatusCancelled},
		{"the cancellation again, later", "subscription_cancelled", billingtest.FixtureUser, periodEnd(12), false, billing.StatusCancelled},
		{"a renewal by another user: the customer moves", "subscription_renewed", other, periodEnd(12), true, billing.StatusActive},
		{"their access level, as it is", "access_level_updated", other, periodEnd(12), false, billing.StatusActive},
	}
	watchers := map[string]func(t *testing.T, d *db.DB) *billingtest.Harness{
		"unwatched": func(t *testing.T, d *db.DB) *billingtest.Harness { return billingtest.New(t, d) },
		"a hook": func(t *testing.T, d *db.DB) *billingtest.Harness {
			h := billingtest.New(t, d)
			h.Svc.OnBillingChange(func(context.Context, string) {})
			return h
		},
		"the outbox": func(t *testing.T, d *db.DB) *billingtest.Harness {
			return billingtest.New(t, d, billingtest.WithOutbound)
		},
	}
	started := billingtest.Fixture(t, "mobile/subscription_started.json")
	for name, newWatched := range watchers {
		t.Run(name, func(t *testing.T) {
			dbtest.Engines(t, func(t *testing.T, d *db.DB) {
				h := newWatched(t, d)
				var lastWrite time.Time
				for i, step := range steps {
					at := start.Add(time.Duration(i) * time.Minute)
					h.SetNow(at)
					h.MustSend(billing.ProviderMobile, billingtest.Edit(t, started, func(m map[string]any) {
						m["event_type"], m["customer_user_id"] = step.eventType, step.user
						m["event_datetime"] = at.Format("2006-01-02T15:04:05.000000-0700")
						m["event_properties"].(map[string]any)["subscription_expires_at"] = step.expires.Format("2006-01-02T15:04:05.000000-0700")
					}))
					if step.written {
						lastWrite = at
					}
					var user, status string
					var end, updated time.Time
					err := d.QueryRow(`select c.user_id, s.status, s.current_period_end, s.updated_at
						from subscriptions s join billing_customers c on c.id = s.billing_customer_id`).Scan(&user, &status, &end, &updated)
					if err != nil {
						t.Fatal(err)
					}
					if user != step.user || status != step.status || !end.Equal(step.expires) || !updated.Equal(lastWrite) {
						t.Fatalf("after %s: %s %s until %s, updated %s; want %s %s until %s, updated %s", step.what,
							user, status, end, updated, step.user, step.status, step.expires, lastWrite)
					}
				}
			})
		})
	}
}

// TestARowThatDriftedFromItsProviderStateIsAChange: an event that leaves the provider's
// state as it was, a duplicate here, still writes the canonical row that state gives. When
// the row had drifted from it (here set by hand), that write is a change: it is recorded,
// from the drifted answer to the restored one, and the hooks are told, on both engines.
func TestARowThatDriftedFromItsProviderStateIsAChange(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d, billingtest.WithOutbound)
		var told []string
		h.Svc.OnBillingChange(func(_ context.Context, user string) { told = append(told, user) })
		started := billingtest.Fixture(t, "mobile/subscription_started.json")
		h.MustSend(billing.ProviderMobile, started)
		h.MustSend(billing.ProviderMobile, started) // a duplicate: no change
		if got := len(outbox(h)); got != 1 {
			t.Fatalf("%d events after a purchase and its duplicate, want 1", got)
		}
		if _, err := d.Exec(`update subscriptions set status = 'expired'`); err != nil {
			t.Fatal(err)
		}
		told = nil

		h.MustSend(billing.ProviderMobile, started) // the duplicate again: the row goes back
		got := outbox(h)
		if len(got) != 2 {
			t.Fatalf("%d events, want 2: the purchase, then the drifted row restored", len(got))
		}
		change := got[1].Body.Data
		if change.Previous.Subscribed || change.Previous.Status == nil || *change.Previous.Status != billing.StatusExpired {
			t.Errorf("previous side %s, want the drifted answer: expired, not subscribed", billingtest.JSON(t, change.Previous))
		}
		now, err := h.Svc.View(context.Background(), billingtest.FixtureUser)
		if err != nil {
			t.Fatal(err)
		}
		if !now.Subscribed || billingtest.JSON(t, change.Current) != billingtest.JSON(t, now) {
			t.Errorf("current side %s, /me says %s", billingtest.JSON(t, change.Current), billingtest.JSON(t, now))
		}
		if len(told) != 1 || told[0] != billingtest.FixtureUser {
			t.Errorf("hooks told %v, want the user once", told)
		}
	})
}
