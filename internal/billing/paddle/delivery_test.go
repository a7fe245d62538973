package paddle_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/paddle"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/webhooks"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// The notification destination's secrets: the old one and the one it is being rotated to.
const oldSecret, newSecret = "pdl_ntfset_old", "pdl_ntfset_new"

// paddlePlans are the harness's plans with pro sold at Paddle's price too.
var paddlePlans = strings.Replace(billingtest.PlansYAML, "price_old_shape]", "price_old_shape, pri_01TESTpromonthly000000001]", 1)

func newHarness(t *testing.T, d *db.DB) *billingtest.Harness {
	h := billingtest.New(t, d, billingtest.WithAdapters(paddle.New([]string{oldSecret, newSecret})))
	syncPlans(t, h, paddlePlans)
	return h
}

func syncPlans(t *testing.T, h *billingtest.Harness, yaml string) {
	t.Helper()
	list, err := plans.ParsePlans([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Svc.SyncPlans(context.Background(), list); err != nil {
		t.Fatal(err)
	}
}

// at is a fixture's time, as the fixtures write them.
func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// send delivers a Paddle fixture (edited by edit, when set), signed with the new secret at
// the harness's clock, and answers the status and the outcome.
func send(t *testing.T, h *billingtest.Harness, name string, edit func(m map[string]any)) (int, string) {
	t.Helper()
	body := billingtest.Fixture(t, "paddle/"+name+".json")
	if edit != nil {
		body = billingtest.Edit(t, body, edit)
	}
	rec := h.Post("/billing/webhooks/paddle", body, http.Header{paddle.HeaderSignature: {paddle.SignHeader(h.Clock(), body, newSecret)}})
	return rec.Code, rec.Header().Get(webhooks.HeaderOutcome)
}

func mustSend(t *testing.T, h *billingtest.Harness, name string, edit func(m map[string]any), want string) {
	t.Helper()
	if code, outcome := send(t, h, name, edit); code != http.StatusOK || outcome != want {
		t.Fatalf("%s: %d %q, want 200 %q", name, code, outcome, want)
	}
}

// A Paddle subscriber reads pro from the start, through the renewal its transaction paid
// for, cancelling until the period's end once a cancellation is scheduled, and free from
// its end — on both engines.
func TestAPaddleSubscriberLivesThroughItsPeriods(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := newHarness(t, d)
		user := billingtest.FixtureUser
		h.SetNow(at(t, "2026-11-01T10:00:05Z"))
		mustSend(t, h, "subscription.created", nil, "applied")
		if got := h.Answer(t, user); got != "true active pro 2026-12-01T10:00:00Z" {
			t.Fatalf("after the start: %s", got)
		}
		h.SetNow(at(t, "2026-12-01T10:00:10Z"))
		mustSend(t, h, "transaction.completed", nil, "applied")
		if got := h.Answer(t, user); got != "true active pro 2027-01-01T10:00:00Z" {
			t.Fatalf("the renewal's payment: %s", got)
		}
		mustSend(t, h, "subscription.updated", nil, "applied")
		h.SetNow(at(t, "2026-12-10T12:00:05Z"))
		mustSend(t, h, "subscription.updated.scheduled_cancel", nil, "applied")
		if got := h.Answer(t, user); got != "true cancelled pro 2027-01-01T10:00:00Z" {
			t.Fatalf("a cancellation at the period's end: %s", got)
		}
		// The same notification again is a duplicate; an older one after a newer one
		// changes nothing.
		mustSend(t, h, "subscription.updated.scheduled_cancel", nil, "duplicate")
		mustSend(t, h, "subscription.updated", nil, "stale")
		if got := h.Answer(t, user); got != "true cancelled pro 2027-01-01T10:00:00Z" {
			t.Fatalf("after an older notification: %s", got)
		}
		h.SetNow(at(t, "2027-01-01T10:00:05Z"))
		mustSend(t, h, "subscription.canceled", nil, "applied")
		if got := h.Answer(t, user); got != "false expired free 2027-01-01T10:00:00Z" {
			t.Fatalf("after the end: %s", got)
		}
		// Canceled is final: a later past_due (a retry's, out of order) brings nothing back,
		// though a payment through a later date is on record.
		mustSend(t, h, "subscription.past_due", func(m map[string]any) { m["occurred_at"] = "2027-01-02T10:00:00Z" }, "stale")
		if got := h.Answer(t, user); got != "false expired free 2027-01-01T10:00:00Z" {
			t.Fatalf("after a past_due that followed the cancellation: %s", got)
		}
	})
}

// An approved full refund of the transaction that paid for the current period ends it
// when approved, for good; a pending one, a partial one, and one of an earlier
// transaction change nothing.
func TestAPaddleRefundEndsThePeriodItPaidFor(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := newHarness(t, d)
		user := billingtest.FixtureUser
		h.SetNow(at(t, "2026-11-05T11:00:05Z"))
		mustSend(t, h, "subscription.created", nil, "applied")
		partial := func(m map[string]any) {
			m["event_id"] = "evt_01TESTpartial000000000001"
			m["data"].(map[string]any)["type"] = "partial"
			m["data"].(map[string]any)["status"] = "approved"
		}
		mustSend(t, h, "adjustment.updated", partial, "ignored")
		mustSend(t, h, "adjustment.created", nil, "applied") // recorded: pending
		if got := h.Answer(t, user); got != "true active pro 2026-12-01T10:00:00Z" {
			t.Fatalf("a pending refund changed the answer: %s", got)
		}
		mustSend(t, h, "adjustment.updated", nil, "applied")
		if got := h.Answer(t, user); got != "false refunded free 2026-11-05T11:00:00Z" {
			t.Fatalf("an approved refund: %s", got)
		}
		// The refunded period stays refunded: a later notification of it does not give it back.
		mustSend(t, h, "subscription.created", func(m map[string]any) {
			m["event_id"], m["occurred_at"] = "evt_01TESTsamePeriodLater0000001", "2026-11-05T11:30:00Z"
		}, "applied")
		if got := h.Answer(t, user); got != "false refunded free 2026-11-05T11:00:00Z" {
			t.Fatalf("the refunded period came back: %s", got)
		}
		// A later period, paid for, does.
		h.SetNow(at(t, "2026-12-01T10:00:10Z"))
		mustSend(t, h, "transaction.completed", nil, "applied")
		if got := h.Answer(t, user); got != "true active pro 2027-01-01T10:00:00Z" {
			t.Fatalf("the next period, paid for: %s", got)
		}
		// A refund of the earlier transaction now is of an older period: nothing changes.
		mustSend(t, h, "adjustment.updated", func(m map[string]any) {
			m["event_id"], m["occurred_at"] = "evt_01TESTlateRefund000000001", "2026-12-02T10:00:00Z"
			m["data"].(map[string]any)["id"] = "adj_01TESTlaterefund0000000001"
		}, "applied")
		if got := h.Answer(t, user); got != "true active pro 2027-01-01T10:00:00Z" {
			t.Fatalf("a refund of an earlier period ended the current one: %s", got)
		}
	})
}

// The signature: a second h1, signed with the secret being rotated to, is enough; a
// missing, wrong, malformed or stale one is 401 and nothing is stored.
func TestPaddleSignatures(t *testing.T) {
	h := newHarness(t, dbtest.SQLite(t))
	h.SetNow(at(t, "2026-11-01T10:00:05Z"))
	body := billingtest.Fixture(t, "paddle/subscription.created.json")
	stale := paddle.SignHeader(h.Clock().Add(-6*time.Minute), body, newSecret)
	for name, header := range map[string]string{
		"none":      "",
		"wrong":     paddle.SignHeader(h.Clock(), body, "a forger's secret"),
		"stale":     stale,
		"malformed": "h1=" + strings.Repeat("0", 64),
		"other key": strings.Replace(paddle.SignHeader(h.Clock(), body, newSecret), "h1=", "h2=", 1),
	} {
		hdr := http.Header{}
		if header != "" {
			hdr.Set(paddle.HeaderSignature, header)
		}
		if rec := h.Post("/billing/webhooks/paddle", body, hdr); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s signature: %d", name, rec.Code)
		}
	}
	if n := h.CountEvents(); n != 0 {
		t.Fatalf("%d events stored from refused deliveries", n)
	}
	// Paddle signs with both secrets during a rotation: the second is ours.
	rotated := strings.Replace(paddle.SignHeader(h.Clock(), body, "pdl_ntfset_another", newSecret), ";", ";other=1;", 1)
	if rec := h.Post("/billing/webhooks/paddle", body, http.Header{paddle.HeaderSignature: {rotated}}); rec.Code != http.StatusOK {
		t.Fatalf("a second h1 with the rotated secret: %d %s", rec.Code, rec.Body)
	}
}

// A price on no plan, or a user tollgate cannot tell, leaves the event unresolved; once
// the plan lists the price, a replay applies it. A customer linked to a user by an earlier
// subscription resolves a later one that names no user.
func TestPaddleUnresolvedThenReplayed(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := newHarness(t, d)
		ctx := context.Background()
		h.SetNow(at(t, "2026-11-01T10:00:05Z"))
		newPrice := func(m map[string]any) {
			item := m["data"].(map[string]any)["items"].([]any)[0].(map[string]any)
			item["price"].(map[string]any)["id"] = "pri_01TESTnotonaplan0000000001"
		}
		mustSend(t, h, "subscription.created", newPrice, "unresolved")
		syncPlans(t, h, strings.Replace(paddlePlans, "pri_01TESTpromonthly000000001]", "pri_01TESTpromonthly000000001, pri_01TESTnotonaplan0000000001]", 1))
		if _, err := h.Svc.Replay(ctx, pipeline.ReplayFilter{Provider: paddle.Provider, Unprocessed: true}, func(string, string, string) {}); err != nil {
			t.Fatal(err)
		}
		if got := h.Answer(t, billingtest.FixtureUser); got != "true active pro 2026-12-01T10:00:00Z" {
			t.Fatalf("after the plan lists the price and a replay: %s", got)
		}
		// A second subscription of the same Paddle customer, naming no user.
		another := func(m map[string]any) {
			m["event_id"] = "evt_01TESTsecondsub0000000001"
			data := m["data"].(map[string]any)
			data["id"], data["custom_data"], data["transaction_id"] = "sub_01TESTsecond00000000000001", nil, "txn_01TESTsecond00000000001"
		}
		mustSend(t, h, "subscription.created", another, "applied")
		if row := h.Canonical(paddle.Provider, "sub_01TESTsecond00000000000001"); row == nil || row.UserID != billingtest.FixtureUser {
			t.Fatalf("the linked customer's second subscription: %+v", row)
		}
		stranger := func(m map[string]any) {
			another(m)
			m["event_id"] = "evt_01TESTstranger00000000001"
			data := m["data"].(map[string]any)
			data["id"], data["customer_id"] = "sub_01TESTstranger000000000001", "ctm_01TESTstranger00000000001"
		}
		mustSend(t, h, "subscription.created", stranger, "unresolved")
	})
}

// A reconcile read that finds the state stored is Same (a quiet pass writes nothing); one
// that finds it changed supersedes it.
func TestAReadOfWhatIsStoredWritesNothing(t *testing.T) {
	a := paddle.New(nil)
	var env struct{ Data json.RawMessage }
	if err := json.Unmarshal(billingtest.Fixture(t, "paddle/subscription.updated.json"), &env); err != nil {
		t.Fatal(err)
	}
	first := at(t, "2026-12-02T00:00:00Z")
	r, _, err := a.ReadSnapshot(env.Data, first)
	if err != nil {
		t.Fatal(err)
	}
	state, _, err := a.Apply(r, billing.Stored{})
	if err != nil {
		t.Fatal(err)
	}
	stored := billing.Stored{State: string(state), LastEventID: billing.SnapshotEventID(first), LastEventType: billing.SnapshotEventType, LastEventAt: first}
	again, _, _ := a.ReadSnapshot(env.Data, first.Add(time.Hour))
	if o := a.Order(again, stored); o != billing.Same {
		t.Fatalf("the same state read again: %v, want Same", o)
	}
	canceled := billingtest.Edit(t, env.Data, func(m map[string]any) { m["status"], m["canceled_at"] = "canceled", "2026-12-02T00:30:00Z" })
	changed, _, _ := a.ReadSnapshot(canceled, first.Add(time.Hour))
	if o := a.Order(changed, stored); o != billing.Supersedes {
		t.Fatalf("a changed state read: %v, want Supersedes", o)
	}
}
