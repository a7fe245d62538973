package retention_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/retention"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/billing/webhooks"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

const day = 24 * time.Hour

// history is a year and a half of web events, each received when it happened: what a
// pass with a 200-day window must remove and keep.
type history struct {
	h      *billingtest.Harness
	bodies map[string][]byte // by name
	now    time.Time
}

func seed(t *testing.T, d *db.DB) history {
	t.Helper()
	h := billingtest.New(t, d)
	now := billingtest.Now
	hist := history{h: h, bodies: map[string][]byte{}, now: now}
	send := func(name, sub, status, price string, ago time.Duration) {
		t.Helper()
		at := now.Add(-ago)
		body := billingtest.Edit(t, billingtest.Fixture(t, "web/customer.subscription.updated.json"), func(m map[string]any) {
			m["id"] = "evt_" + name
			obj := billingtest.Path(m, "data", "object")
			obj["id"], obj["status"] = sub, status
			obj["items"].(map[string]any)["data"].([]any)[0].(map[string]any)["price"].(map[string]any)["id"] = price
		})
		body, err := stripe.MoveToNow(body, at)
		if err != nil {
			t.Fatal(err)
		}
		h.SetNow(at)
		if rec := h.SendWeb(body); rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", name, rec.Code, rec.Body)
		}
		hist.bodies[name] = body
	}
	const pro = "price_1TESTmonthlyPro000001"
	send("a1", "sub_a", "active", pro, 500*day)
	send("a2", "sub_a", "past_due", pro, 300*day)
	send("a3", "sub_a", "active", pro, 10*day)                // sub_a's newest
	send("b1", "sub_b", "active", pro, 500*day)               // sub_b's newest, however old
	send("u1", "sub_u1", "active", "price_unmapped", 300*day) // unresolved, inside its longer window
	send("u2", "sub_u2", "active", "price_unmapped", 500*day) // unresolved, past it
	h.SetNow(now)
	return hist
}

// storedIDs are the provider event ids stored, sorted.
func storedIDs(t *testing.T, h *billingtest.Harness) []string {
	t.Helper()
	rows, err := h.DB.Query("select provider_event_id from provider_events")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// A pass removes exactly the events older than the window but each subscription's newest
// and the unresolved ones inside their longer window. The canonical state and the answer
// do not move; a removed event redelivered is answered 200 as a duplicate and stores
// nothing; a later event orders as before.
// Archiving first takes another path (the events are read, written, then removed): both
// are run.
func TestAPassRemovesOnlyWhatMayGo(t *testing.T) {
	for _, archived := range []bool{false, true} {
		t.Run(map[bool]string{false: "in bulk", true: "archived first"}[archived], func(t *testing.T) {
			dbtest.Engines(t, func(t *testing.T, d *db.DB) { passRemovesOnlyWhatMayGo(t, d, archived) })
		})
	}
}

func passRemovesOnlyWhatMayGo(t *testing.T, d *db.DB, archived bool) {
	s := seed(t, d)
	h := s.h
	ctx := context.Background()
	before, answer := h.CanonicalState(), h.Answer(t, billingtest.FixtureUser)
	all := storedIDs(t, h)
	opts := retention.Options{Window: 200 * day, Unresolved: 400 * day, Clock: h.Clock}
	if archived {
		opts.ArchiveDir = t.TempDir()
	}
	p := retention.New(d, opts)

	dry, err := p.Pass(ctx, true)
	if err != nil || dry.Removed != 3 || dry.Unresolved != 1 || !slices.Equal(storedIDs(t, h), all) {
		t.Fatalf("dry run: %+v %v; stored %v", dry, err, storedIDs(t, h))
	}
	res, err := p.Pass(ctx, false)
	if err != nil || res.Removed != 3 || res.Unresolved != 1 || len(res.Archived) != map[bool]int{false: 0, true: 2}[archived] {
		t.Fatalf("pass: %+v %v", res, err) // archived: the days 500 and 300 days ago
	}
	kept := storedIDs(t, h)
	for _, name := range []string{"a3", "b1", "u1"} {
		if !slices.ContainsFunc(kept, func(id string) bool { return id == eventID(t, s.bodies[name]) }) {
			t.Errorf("%s removed; kept %v", name, kept)
		}
	}
	if len(kept) != 3 {
		t.Fatalf("kept %v, want a3, b1 and u1", kept)
	}
	if again, err := p.Pass(ctx, false); err != nil || again.Removed != 0 {
		t.Fatalf("a second pass: %+v %v", again, err)
	}
	if got := h.CanonicalState(); got != before {
		t.Fatalf("canonical state moved:\n%s\nwas\n%s", got, before)
	}
	if got := h.Answer(t, billingtest.FixtureUser); got != answer {
		t.Fatalf("answer %s, was %s", got, answer)
	}

	for _, name := range []string{"a1", "a2", "u2"} {
		rec := h.SendWeb(s.bodies[name])
		if rec.Code != http.StatusOK || rec.Header().Get(webhooks.HeaderOutcome) != billing.OutcomeDuplicate {
			t.Errorf("%s redelivered: %d %s", name, rec.Code, rec.Header().Get(webhooks.HeaderOutcome))
		}
	}
	if got := storedIDs(t, h); !slices.Equal(got, kept) {
		t.Fatalf("redeliveries stored rows: %v", got)
	}
	if got := h.CanonicalState(); got != before {
		t.Fatalf("a redelivery moved the canonical state:\n%s", got)
	}
	if rec := h.SendWeb(s.bodies["a3"]); rec.Header().Get(webhooks.HeaderOutcome) != billing.OutcomeDuplicate {
		t.Fatalf("the kept newest redelivered: %s", rec.Header().Get(webhooks.HeaderOutcome))
	}
	later := billingtest.Edit(t, s.bodies["a3"], func(m map[string]any) {
		m["id"], m["created"] = "evt_a4", m["created"].(float64)+60
		billingtest.Path(m, "data", "object")["status"] = "past_due"
	})
	if rec := h.SendWeb(later); rec.Header().Get(webhooks.HeaderOutcome) != billing.OutcomeApplied {
		t.Fatalf("a later event: %d %s", rec.Code, rec.Header().Get(webhooks.HeaderOutcome))
	}
	if rec := h.SendWeb(s.bodies["a2"]); rec.Header().Get(webhooks.HeaderOutcome) != billing.OutcomeDuplicate {
		t.Fatalf("a removed event after the later one: %s", rec.Header().Get(webhooks.HeaderOutcome))
	}
}

func eventID(t *testing.T, body []byte) string {
	var ev struct{ ID string }
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	return ev.ID
}

// Export writes every field of every selected event, one JSON object per line.
func TestExportWritesEveryField(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		s := seed(t, d)
		var buf bytes.Buffer
		n, err := retention.Export(context.Background(), d, &buf, s.now.Add(-200*day))
		if err != nil || n != 5 { // all but a3 were received more than 200 days ago
			t.Fatalf("exported %d: %v", n, err)
		}
		want := []string{"id", "provider", "provider_event_id", "event_type", "payload", "received_at", "processed_at",
			"processing_error", "outcome", "user_id", "subscription_id", "plan_before", "status_before", "period_end_before",
			"plan_after", "status_after", "period_end_after", "moved_from_user_id", "created_at", "updated_at"}
		lines := bufio.NewScanner(&buf)
		lines.Buffer(nil, 1<<20)
		seen := 0
		for lines.Scan() {
			var rec map[string]json.RawMessage
			if err := json.Unmarshal(lines.Bytes(), &rec); err != nil {
				t.Fatalf("line %d is not a JSON object: %v", seen+1, err)
			}
			for _, k := range want {
				if _, ok := rec[k]; !ok {
					t.Errorf("line %d lacks %s", seen+1, k)
				}
			}
			if len(rec) != len(want) {
				t.Errorf("line %d has %d fields, want %d", seen+1, len(rec), len(want))
			}
			var payload map[string]any
			if err := json.Unmarshal(rec["payload"], &payload); err != nil || payload["id"] == nil {
				t.Errorf("line %d's payload is not the event: %s", seen+1, rec["payload"])
			}
			seen++
		}
		if seen != n {
			t.Fatalf("%d lines for %d events", seen, n)
		}
	})
}
