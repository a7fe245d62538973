package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/billing/stripe/stripemock"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/stores"
)

// backfillNow is when the test backfills read their pages: inside the fixtures' period.
var backfillNow = billingtest.Now

// fakeWebAPI serves GET /v1/subscriptions as the provider does: newest first, pages of
// `limit` after `starting_after`, narrowed by customer and created[gte]. Each page is
// refused once with a 429 when rateLimit is set.
type fakeWebAPI struct {
	mu        sync.Mutex
	subs      []json.RawMessage // newest first
	rateLimit bool
	limited   map[string]bool
	queries   []url.Values // every query answered with a page
}

func newFakeWebAPI(t *testing.T, subs []json.RawMessage) (*fakeWebAPI, *stripe.Client) {
	api := &fakeWebAPI{subs: subs, limited: map[string]bool{}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return api, stripe.NewClient(stripe.Config{Key: "sk_test_backfill", Base: srv.URL, FirstWait: time.Millisecond})
}

func (a *fakeWebAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := r.URL.Query()
	if r.URL.Path != "/v1/subscriptions" || q.Get("status") != "all" || r.Header.Get("Authorization") != "Bearer sk_test_backfill" {
		http.Error(w, `{"error":{"type":"invalid_request_error","message":"unexpected request"}}`, http.StatusBadRequest)
		return
	}
	if a.rateLimit && !a.limited[q.Get("starting_after")] {
		a.limited[q.Get("starting_after")] = true
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":{"type":"invalid_request_error","code":"rate_limit","message":"Too many requests"}}`)
		return
	}
	a.queries = append(a.queries, q)
	limit, _ := strconv.Atoi(q.Get("limit"))
	since, _ := strconv.ParseInt(q.Get("created[gte]"), 10, 64)
	var page []json.RawMessage
	started := q.Get("starting_after") == ""
	hasMore := false
	for _, raw := range a.subs {
		var sub struct {
			ID       string
			Customer string
			Created  int64
		}
		json.Unmarshal(raw, &sub)
		switch {
		case !started:
			started = sub.ID == q.Get("starting_after")
		case q.Get("customer") != "" && sub.Customer != q.Get("customer"), sub.Created < since:
		case len(page) == limit:
			hasMore = true
		default:
			page = append(page, raw)
		}
	}
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "url": "/v1/subscriptions", "data": page, "has_more": hasMore})
}

// startingAfters lists the cursor of every page answered.
func (a *fakeWebAPI) startingAfters() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, q := range a.queries {
		out = append(out, q.Get("starting_after"))
	}
	return out
}

// apiSubscription is a subscription object as the list endpoint returns it: the fixture's,
// with its own id, customer and user, created n hours before the fixtures' first event,
// then changed by fn.
func apiSubscription(t *testing.T, n int, fn func(obj map[string]any)) json.RawMessage {
	t.Helper()
	var event map[string]any
	if err := json.Unmarshal(billingtest.Fixture(t, "web/customer.subscription.updated.json"), &event); err != nil {
		t.Fatal(err)
	}
	obj := billingtest.Path(event, "data", "object")
	obj["id"] = fmt.Sprintf("sub_backfill_%02d", n)
	obj["customer"] = fmt.Sprintf("cus_backfill_%02d", n)
	obj["created"] = float64(billingtest.WebCreated - int64(n)*3600)
	obj["metadata"] = map[string]any{"user_id": backfillUser(n)}
	if fn != nil {
		fn(obj)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func backfillUser(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// backfillAccount is nine subscriptions, newest first, in three pages of three: every
// status, both API shapes, a customer nobody can resolve and a price no plan sells.
func backfillAccount(t *testing.T) []json.RawMessage {
	at := float64(backfillNow.Unix())
	return []json.RawMessage{
		apiSubscription(t, 1, nil), // active, new shape
		apiSubscription(t, 2, func(o map[string]any) { // active, old shape
			item := billingtest.Path(o, "items")["data"].([]any)[0].(map[string]any)
			o["current_period_end"], o["current_period_start"] = item["current_period_end"], item["current_period_start"]
			delete(item, "current_period_end")
			delete(item, "current_period_start")
			billingtest.Path(item, "price")["id"] = "price_old_shape"
		}),
		apiSubscription(t, 3, func(o map[string]any) { o["status"], o["trial_end"] = "trialing", float64(1791460800) }),
		apiSubscription(t, 4, func(o map[string]any) { o["status"] = "past_due" }),
		apiSubscription(t, 5, func(o map[string]any) { o["cancel_at_period_end"] = true }),
		apiSubscription(t, 6, func(o map[string]any) {
			o["status"], o["ended_at"], o["canceled_at"] = "canceled", at-86400, at-86400
		}),
		apiSubscription(t, 7, func(o map[string]any) { o["status"] = "incomplete_expired" }),
		apiSubscription(t, 8, func(o map[string]any) { o["metadata"] = map[string]any{} }), // unknown customer
		apiSubscription(t, 9, func(o map[string]any) { // unmapped price
			billingtest.Path(billingtest.Path(o, "items")["data"].([]any)[0].(map[string]any), "price")["id"] = "price_nobody_sells"
		}),
	}
}

type backfillRun struct {
	sum     pipeline.BackfillSummary
	changes []pipeline.BackfillChange
}

// backfillOptions are the backfill command's flags.
type backfillOptions struct {
	Since           time.Time
	Customer        string
	PageSize        int
	DryRun, Restart bool
}

// backfill runs a backfill of the web provider through api, as the command does.
func backfill(ctx context.Context, h *billingtest.Harness, api *stripe.Client, opts backfillOptions, onPage func(pipeline.BackfillSummary)) backfillRun {
	h.T.Helper()
	var run backfillRun
	if opts.PageSize == 0 {
		opts.PageSize = 3
	}
	query := stripe.SubscriptionQuery{CreatedSince: opts.Since, Customer: opts.Customer, Limit: opts.PageSize}
	read := func(ctx context.Context, after string) (pipeline.Page, error) {
		q := query
		q.StartingAfter = after
		page, err := api.Subscriptions(ctx, q)
		return pipeline.Page{Subscriptions: page.Subscriptions, LastID: page.LastID, HasMore: page.HasMore}, err
	}
	popts := pipeline.BackfillOptions{Scope: stores.ListQuery{CreatedSince: opts.Since, Customer: opts.Customer}.Scope(), DryRun: opts.DryRun, Restart: opts.Restart}
	sum, err := h.Svc.Backfill(ctx, billing.ProviderWeb, read, popts, func(c pipeline.BackfillChange) { run.changes = append(run.changes, c) }, func(s pipeline.BackfillSummary) {
		if onPage != nil {
			onPage(s)
		}
	})
	if err != nil {
		h.T.Fatalf("backfill: %v", err)
	}
	run.sum = sum
	return run
}

func (r backfillRun) counts() string {
	return fmt.Sprintf("pages=%d seen=%d created=%d updated=%d unchanged=%d unresolved=%d",
		r.sum.Pages, r.sum.Seen, r.sum.Created, r.sum.Updated, r.sum.Unchanged, r.sum.Unresolved)
}

func TestBackfillGivesTheStateWebhooksGive(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		account := backfillAccount(t)
		api, client := newFakeWebAPI(t, account)
		api.rateLimit = true
		h := billingtest.New(t, d)
		h.SetNow(backfillNow)
		run := backfill(context.Background(), h, client, backfillOptions{}, nil)
		if got := run.counts(); got != "pages=3 seen=9 created=7 updated=0 unchanged=0 unresolved=2" {
			t.Fatalf("first run: %s", got)
		}
		wantUnresolved := []string{
			"sub_backfill_08: unresolved web customer customer_id=cus_backfill_08",
			"sub_backfill_09: unmapped price or product price_ids=[price_nobody_sells]",
		}
		if !slices.Equal(run.sum.UnresolvedIDs, wantUnresolved) {
			t.Fatalf("unresolved %q", run.sum.UnresolvedIDs)
		}
		if got := len(api.limited); got != 3 {
			t.Fatalf("%d pages were rate limited and retried, want 3", got)
		}
		if !slices.Equal(api.startingAfters(), []string{"", "sub_backfill_03", "sub_backfill_06"}) {
			t.Fatalf("pages asked for after %q", api.startingAfters())
		}

		// The same subscriptions delivered as webhooks, each an update at the time of the read.
		byWebhook := billingtest.New(t, dbtest.SQLite(t))
		byWebhook.SetNow(backfillNow)
		for i, obj := range account {
			event := billingtest.Edit(t, billingtest.Fixture(t, "web/customer.subscription.updated.json"), func(m map[string]any) {
				m["id"], m["created"] = fmt.Sprintf("evt_equivalent_%d", i), float64(backfillNow.Unix())
				var o map[string]any
				json.Unmarshal(obj, &o)
				m["data"] = map[string]any{"object": o}
			})
			byWebhook.MustSend(billing.ProviderWeb, event)
		}
		got, want := h.CanonicalState(), byWebhook.CanonicalState()
		if got != want || strings.Count(got, "\n") != 7 {
			t.Fatalf("backfill gave\n%s\nwebhooks gave\n%s", got, want)
		}
		for _, line := range []string{
			"sub_backfill_02 active 2026-11-01 12:00:00 +0000 UTC pro " + backfillUser(2),                      // the old shape's period end
			"sub_backfill_03 trialing 2026-10-08 12:00:00 +0000 UTC pro " + backfillUser(3),                    // trial_end
			"sub_backfill_05 cancelled 2026-11-01 12:00:00 +0000 UTC pro " + backfillUser(5),                   // cancelling
			"sub_backfill_06 expired 2026-10-14 12:00:00 +0000 UTC pro " + backfillUser(6),                     // ended_at
			"sub_backfill_07 expired 2026-10-15 12:00:00 +0000 UTC pro " + backfillUser(7),                     // the read's time
			"sub_backfill_01 active 2026-11-01 12:00:00 +0000 UTC pro " + backfillUser(1) + " cus_backfill_01", // linked
		} {
			if !strings.Contains(got, line) {
				t.Fatalf("no %q in\n%s", line, got)
			}
		}

		// A second run, an hour later, changes nothing at all.
		tables := []string{"provider_subscriptions", "subscriptions", "billing_customers", "provider_events"}
		before := h.DumpTables(tables...)
		h.SetNow(backfillNow.Add(time.Hour))
		again := backfill(context.Background(), h, client, backfillOptions{}, nil)
		if got := again.counts(); got != "pages=3 seen=9 created=0 updated=0 unchanged=7 unresolved=2" {
			t.Fatalf("second run: %s", got)
		}
		if after := h.DumpTables(tables...); after != before {
			t.Fatalf("the second run changed rows:\nbefore\n%s\nafter\n%s", before, after)
		}
		if n := h.CountRows("backfill_cursors"); n != 0 {
			t.Fatalf("a finished run left %d cursor(s)", n)
		}
	})
}

func TestBackfillDryRunReportsAndWritesNothing(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		account := backfillAccount(t)
		_, client := newFakeWebAPI(t, account)
		h := billingtest.New(t, d)
		h.SetNow(backfillNow)
		// One subscription is known already, as past_due: the dry run says it would change.
		h.MustSend(billing.ProviderWeb, billingtest.Edit(t, billingtest.Fixture(t, "web/customer.subscription.updated.json"), func(m map[string]any) {
			m["created"] = float64(backfillNow.Unix() - 60)
			var o map[string]any
			json.Unmarshal(apiSubscription(t, 1, func(o map[string]any) { o["status"] = "past_due" }), &o)
			m["data"] = map[string]any{"object": o}
		}))
		tables := []string{"provider_subscriptions", "subscriptions", "billing_customers"}
		before := h.DumpTables(tables...)
		run := backfill(context.Background(), h, client, backfillOptions{DryRun: true}, nil)
		if after := h.DumpTables(tables...); after != before || h.CountRows("backfill_cursors") != 0 {
			t.Fatalf("a dry run wrote:\nbefore\n%s\nafter\n%s", before, after)
		}
		if got := run.counts(); got != "pages=3 seen=9 created=6 updated=1 unchanged=0 unresolved=2" {
			t.Fatalf("dry run: %s", got)
		}
		first := run.changes[0]
		if first.Outcome != pipeline.BackfillUpdated || first.Before.Status != billing.StatusPastDue || first.After.Status != billing.StatusActive || first.LinkedUser != "" {
			t.Fatalf("sub 1: %+v before %+v after %+v", first, first.Before, first.After)
		}
		second := run.changes[1]
		if second.Outcome != pipeline.BackfillCreated || second.Before != nil || second.After.Plan != "pro" || second.LinkedUser != backfillUser(2) {
			t.Fatalf("sub 2: %+v after %+v", second, second.After)
		}
	})
}

func TestBackfillResumesWhereItWasInterrupted(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		account := backfillAccount(t)
		api, client := newFakeWebAPI(t, account)
		h := billingtest.New(t, d)
		h.SetNow(backfillNow)

		// Interrupted (SIGINT) while the first page is processed: that page is finished.
		ctx, cancel := context.WithCancel(context.Background())
		first := backfill(ctx, h, client, backfillOptions{}, func(pipeline.BackfillSummary) { cancel() })
		if !first.sum.Interrupted || first.sum.Cursor != "sub_backfill_03" || first.counts() != "pages=1 seen=3 created=3 updated=0 unchanged=0 unresolved=0" {
			t.Fatalf("interrupted run: %+v", first.sum)
		}
		// Another scope does not pick the cursor up.
		other := backfill(context.Background(), h, client, backfillOptions{Customer: "cus_backfill_05", DryRun: true}, nil)
		if other.sum.ResumedAfter != "" || other.sum.Seen != 1 || other.changes[0].SubscriptionID != "sub_backfill_05" {
			t.Fatalf("customer run: %+v", other.sum)
		}

		resumed := backfill(context.Background(), h, client, backfillOptions{}, nil)
		if resumed.sum.ResumedAfter != "sub_backfill_03" || resumed.sum.ResumedDone != 3 || resumed.counts() != "pages=2 seen=6 created=4 updated=0 unchanged=0 unresolved=2" {
			t.Fatalf("resumed run: %+v", resumed.sum)
		}
		if got := api.startingAfters(); !slices.Equal(got, []string{"", "", "sub_backfill_03", "sub_backfill_06"}) {
			t.Fatalf("pages asked for after %q", got)
		}
		whole := billingtest.New(t, dbtest.SQLite(t))
		whole.SetNow(backfillNow)
		_, fresh := newFakeWebAPI(t, account)
		backfill(context.Background(), whole, fresh, backfillOptions{}, nil)
		if got, want := h.CanonicalState(), whole.CanonicalState(); got != want {
			t.Fatalf("interrupted and resumed\n%s\nin one go\n%s", got, want)
		}
		if n := h.CountRows("backfill_cursors"); n != 0 {
			t.Fatalf("%d cursor(s) left after the resumed run finished", n)
		}

		// --restart forgets a cursor.
		ctx, cancel = context.WithCancel(context.Background())
		backfill(ctx, h, client, backfillOptions{}, func(pipeline.BackfillSummary) { cancel() })
		restarted := backfill(context.Background(), h, client, backfillOptions{Restart: true}, nil)
		if restarted.sum.ResumedAfter != "" || restarted.sum.Seen != 9 {
			t.Fatalf("restarted run: %+v", restarted.sum)
		}
	})
}

// A backfill's snapshot is the state at the time of the read: an event at that time or
// later wins, in whichever order the two arrive, and concurrently too.
func TestBackfillNeverOverwritesANewerEvent(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		h.SetNow(backfillNow)
		read := backfillNow.Unix()
		update := func(n int, id string, created int64, status string) []byte {
			return billingtest.Edit(t, billingtest.Fixture(t, "web/customer.subscription.updated.json"), func(m map[string]any) {
				m["id"], m["created"] = id, float64(created)
				var o map[string]any
				json.Unmarshal(apiSubscription(t, n, func(o map[string]any) { o["status"] = status }), &o)
				m["data"] = map[string]any{"object": o, "previous_attributes": map[string]any{"status": "active"}}
			})
		}
		account := []json.RawMessage{apiSubscription(t, 1, nil), apiSubscription(t, 2, nil), apiSubscription(t, 3, nil)}
		_, client := newFakeWebAPI(t, account)
		h.MustSend(billing.ProviderWeb, update(1, "evt_later", read+60, "past_due"))    // newer than the read
		h.MustSend(billing.ProviderWeb, update(2, "evt_same_second", read, "past_due")) // as new as the read
		h.MustSend(billing.ProviderWeb, update(3, "evt_earlier", read-60, "past_due"))  // older: the read wins
		run := backfill(context.Background(), h, client, backfillOptions{}, nil)
		for i, want := range []string{billing.StatusPastDue, billing.StatusPastDue, billing.StatusActive} {
			sub := fmt.Sprintf("sub_backfill_%02d", i+1)
			if got := h.Canonical(billing.ProviderWeb, sub); got == nil || got.Status != want {
				t.Fatalf("%s: %+v, want %s", sub, got, want)
			}
		}
		if c := run.changes[0]; c.Outcome != pipeline.BackfillUnchanged || !c.NewerEvent {
			t.Fatalf("sub 1: %+v", c)
		}
		if c := run.changes[2]; c.Outcome != pipeline.BackfillUpdated || c.NewerEvent {
			t.Fatalf("sub 3: %+v", c)
		}
		// After the backfill: an event newer than the read applies, an older one does not.
		h.MustSend(billing.ProviderWeb, update(3, "evt_after_read", read+1, "past_due"))
		h.MustSend(billing.ProviderWeb, update(3, "evt_before_read", read-30, "active"))
		if got := h.Canonical(billing.ProviderWeb, "sub_backfill_03"); got.Status != billing.StatusPastDue {
			t.Fatalf("sub 3 after later events: %+v", got)
		}

		// Concurrently: twelve subscriptions backfilled while newer events for each arrive.
		var many []json.RawMessage
		for n := 10; n < 22; n++ {
			many = append(many, apiSubscription(t, n, nil))
		}
		_, client = newFakeWebAPI(t, many)
		var wg sync.WaitGroup
		for n := 10; n < 22; n++ {
			wg.Go(func() {
				rec := h.SendWeb(update(n, fmt.Sprintf("evt_concurrent_%d", n), read+5, "past_due"))
				if rec.Code != http.StatusOK {
					t.Errorf("event for %d: %d %s", n, rec.Code, rec.Body)
				}
			})
		}
		backfill(context.Background(), h, client, backfillOptions{PageSize: 4}, nil)
		wg.Wait()
		for n := 10; n < 22; n++ {
			sub := fmt.Sprintf("sub_backfill_%02d", n)
			if got := h.Canonical(billing.ProviderWeb, sub); got == nil || got.Status != billing.StatusPastDue {
				t.Fatalf("%s: %+v: the backfill overwrote a newer event", sub, got)
			}
		}
	})
}

// stripe-mock validates the requests against the provider's OpenAPI description; its
// fixture subscription names a customer and a price tollgate does not know.
func TestBackfillAgainstStripeMock(t *testing.T) {
	base := stripemock.Start(t)
	h := billingtest.New(t, dbtest.SQLite(t))
	client := stripe.NewClient(stripe.Config{Key: "sk_test_123", Base: base, Attempts: 1})
	for _, opts := range []backfillOptions{{}, {Since: backfillNow, Customer: "cus_123", PageSize: 10}, {DryRun: true}} {
		run := backfill(context.Background(), h, client, opts, nil)
		if run.sum.Seen == 0 || run.sum.Unresolved != run.sum.Seen {
			t.Fatalf("%+v: %+v", opts, run.sum)
		}
	}
}
