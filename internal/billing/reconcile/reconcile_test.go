package reconcile_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

const testPlans = `
plans:
  free:
    default: true
    entitlements: [{name: projects, value: 1}]
  pro:
    entitlements: [{name: projects, value: 10}]
    web_prices: [price_pro]
`

// account is the provider's account as its API lists it: subscriptions newest first, in
// pages of pageSize, answering 429 to the next storm429 requests.
type account struct {
	mu       sync.Mutex
	subs     []string
	pageSize int
	storm429 atomic.Int32
	requests atomic.Int32
}

func (a *account) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.requests.Add(1)
	if a.storm429.Add(-1) >= 0 {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":{"type":"rate_limit_error","message":"Too many requests"}}`)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	start := 0
	if after := r.URL.Query().Get("starting_after"); after != "" {
		for i, s := range a.subs {
			if strings.Contains(s, `"id":"`+after+`"`) {
				start = i + 1
			}
		}
	}
	end := min(start+a.pageSize, len(a.subs))
	fmt.Fprintf(w, `{"object":"list","has_more":%v,"data":[%s]}`, end < len(a.subs), strings.Join(a.subs[start:end], ","))
}

func subscription(id, user, status string, created time.Time) string {
	return fmt.Sprintf(`{"id":"%s","object":"subscription","customer":"cus_%s","status":"%s","created":%d,"metadata":{"user_id":"%s"},
		"items":{"object":"list","data":[{"price":{"id":"price_pro","unit_amount":900,"currency":"usd"},"current_period_end":%d}]}}`,
		id, id, status, created.Unix(), user, created.AddDate(0, 1, 0).Unix())
}

func userN(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

type fixture struct {
	d        *db.DB
	pipeline *pipeline.Pipeline
	account  *account
	read     pipeline.PageReader
	registry *prometheus.Registry
}

func newFixture(t *testing.T, d *db.DB) *fixture {
	t.Helper()
	list, err := plans.ParsePlans([]byte(testPlans))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plans.Sync(context.Background(), d, list, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := &fixture{d: d, account: &account{pageSize: 2}, registry: prometheus.NewRegistry()}
	f.pipeline = pipeline.New(d, log, pipeline.Options{Adapters: []billing.Adapter{stripe.New("")}})
	srv := httptest.NewServer(f.account)
	t.Cleanup(srv.Close)
	api := stripe.NewClient(stripe.Config{Key: "sk_test_reconcile", Base: srv.URL, FirstWait: time.Millisecond})
	f.read = func(ctx context.Context, after string) (pipeline.Page, error) {
		page, err := api.Subscriptions(ctx, stripe.SubscriptionQuery{StartingAfter: after})
		return pipeline.Page{Subscriptions: page.Subscriptions, LastID: page.LastID, HasMore: page.HasMore}, err
	}
	return f
}

func (f *fixture) reconciler(read pipeline.PageReader, reg prometheus.Registerer) *reconcile.Reconciler {
	return reconcile.New(f.d, f.pipeline, slog.New(slog.NewTextHandler(io.Discard, nil)), reconcile.Options{Provider: billing.ProviderWeb, Read: read, Registerer: reg})
}

func (f *fixture) status(t *testing.T, sub string) string {
	t.Helper()
	var status string
	err := f.d.QueryRow(`select s.status from subscriptions s join provider_subscriptions ps on ps.id = s.provider_subscription_id
		where ps.provider_subscription_id = $1`, sub).Scan(&status)
	if err != nil {
		return "none"
	}
	return status
}

// A subscription whose webhooks were lost is repaired by the next pass, which records and
// counts the drift; a second pass finds none; a newer stored webhook is never overwritten
// by the older read; a storm of 429s is waited out.
func TestReconcileRepairsDrift(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		now := time.Now().UTC()
		f.account.subs = []string{
			subscription("sub_lost", userN(1), "active", now.Add(-time.Hour)),
			subscription("sub_newer_webhook", userN(2), "active", now.Add(-2*time.Hour)),
			subscription("sub_in_step", userN(3), "active", now.Add(-3*time.Hour)),
		}
		// The webhooks tollgate did get: sub_in_step as it is, and a cancellation of
		// sub_newer_webhook an hour from now, newer than any read of this test.
		for i, ev := range []struct{ sub, user, status string }{{"sub_in_step", userN(3), "active"}, {"sub_newer_webhook", userN(2), "canceled"}} {
			body := fmt.Sprintf(`{"id":"evt_%d","object":"event","type":"customer.subscription.updated","created":%d,"data":{"object":%s}}`,
				i, now.Add(time.Hour).Unix(), subscription(ev.sub, ev.user, ev.status, now.Add(-3*time.Hour)))
			if done, err := f.pipeline.Ingest(context.Background(), billing.ProviderWeb, billing.Event{ID: fmt.Sprintf("evt_%d", i), Type: "customer.subscription.updated"}, []byte(body)); err != nil || done.Outcome != billing.OutcomeApplied {
				t.Fatalf("webhook %d: %+v %v", i, done, err)
			}
		}
		f.account.storm429.Store(3)
		r := f.reconciler(f.read, f.registry)
		res, err := r.Pass(context.Background(), false)
		if err != nil || res.Checked != 3 || res.Drifted != 1 || res.Repaired != 1 {
			t.Fatalf("first pass: %+v %v", res, err)
		}
		if f.status(t, "sub_lost") != "active" || f.status(t, "sub_newer_webhook") != "expired" {
			t.Fatalf("after the pass: lost %s, newer webhook %s", f.status(t, "sub_lost"), f.status(t, "sub_newer_webhook"))
		}
		if got := driftTotal(t, f.registry, billing.ProviderWeb); got != 1 {
			t.Fatalf("tollgate_reconcile_drift_total %v", got)
		}
		var drift string
		var drifted int
		if err := d.QueryRow("select drifted, drift from reconcile_runs order by id desc limit 1").Scan(&drifted, &drift); err != nil ||
			drifted != 1 || !strings.HasPrefix(drift, "sub_lost: none → pro active until ") {
			t.Fatalf("recorded run: %d %q %v", drifted, drift, err)
		}
		if res, err := r.Pass(context.Background(), false); err != nil || res.Drifted != 0 || res.Checked != 3 {
			t.Fatalf("second pass: %+v %v", res, err)
		}
	})
}

// driftTotal is tollgate_reconcile_drift_total{provider} as the registry gathers it.
func driftTotal(t *testing.T, reg *prometheus.Registry, provider string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil || len(families) != 1 || families[0].GetName() != "tollgate_reconcile_drift_total" {
		t.Fatalf("metrics %v %v", families, err)
	}
	for _, m := range families[0].GetMetric() {
		if m.GetLabel()[0].GetValue() == provider {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// Two processes on one database never reconcile at once: the second finds the lease
// taken and skips; once the first is done, it runs. A pass interrupted mid-way (a
// restart) leaves its place, and the next pass resumes there.
func TestReconcileLeaseAndResume(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		now := time.Now().UTC()
		for i := range 5 {
			f.account.subs = append(f.account.subs, subscription(fmt.Sprintf("sub_%d", i), userN(10+i), "active", now.Add(-time.Duration(i)*time.Hour)))
		}
		inPage := make(chan struct{})
		release := make(chan struct{})
		var once sync.Once
		blocking := func(ctx context.Context, after string) (pipeline.Page, error) {
			once.Do(func() { close(inPage); <-release })
			return f.read(ctx, after)
		}
		first, second := f.reconciler(blocking, nil), f.reconciler(f.read, nil)
		done := make(chan error)
		go func() { _, err := first.Pass(context.Background(), false); done <- err }()
		<-inPage
		if _, err := second.Pass(context.Background(), false); !errors.Is(err, reconcile.ErrBusy) {
			t.Fatalf("a second process while the first reconciles: %v", err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}

		// A restart after the first page: the next pass starts after it.
		ctx, cancel := context.WithCancel(context.Background())
		var afters []string
		stopping := func(ctx2 context.Context, after string) (pipeline.Page, error) {
			afters = append(afters, after)
			if len(afters) == 2 {
				cancel() // the process stops while fetching the second page
			}
			return f.read(ctx2, after)
		}
		res, err := f.reconciler(stopping, nil).Pass(ctx, false)
		if !errors.Is(err, reconcile.ErrInterrupted) || !res.Interrupted || res.Checked != 2 {
			t.Fatalf("interrupted pass: %+v %v", res, err)
		}
		// Recorded as interrupted, with the page it finished; the lease is free at once.
		var checked int
		var interrupted bool
		if err := d.QueryRow("select checked, interrupted from reconcile_runs order by id desc limit 1").Scan(&checked, &interrupted); err != nil ||
			checked != 2 || !interrupted {
			t.Fatalf("the interrupted pass is recorded as %d checked, interrupted %v (%v)", checked, interrupted, err)
		}
		afters = nil
		res, err = f.reconciler(func(ctx context.Context, after string) (pipeline.Page, error) {
			afters = append(afters, after)
			return f.read(ctx, after)
		}, nil).Pass(context.Background(), false)
		if err != nil || len(afters) == 0 || afters[0] != "sub_1" || res.Checked != 3 {
			t.Fatalf("resumed pass read after %v: %+v %v", afters, res, err)
		}
	})
}

// A provider that keeps answering the same page with "more to come" fails the pass, which
// is recorded with its error, instead of running for ever.
func TestReconcileStuckCursorFailsThePass(t *testing.T) {
	f := newFixture(t, dbtest.SQLite(t))
	one := subscription("sub_again", userN(42), "active", time.Now().UTC().Add(-time.Hour))
	reads := 0
	again := func(ctx context.Context, after string) (pipeline.Page, error) {
		if reads++; reads > 10 {
			t.Fatal("still reading the same page after 10 reads")
		}
		return pipeline.Page{Subscriptions: []json.RawMessage{json.RawMessage(one)}, LastID: "sub_again", HasMore: true}, nil
	}
	_, err := f.reconciler(again, nil).Pass(context.Background(), false)
	if !errors.Is(err, pipeline.ErrCursorStuck) {
		t.Fatalf("the pass ended with %v", err)
	}
	var failed sql.NullString
	if err := f.d.QueryRow("select error from reconcile_runs").Scan(&failed); err != nil || !strings.Contains(failed.String, "do not move past the cursor") {
		t.Fatalf("recorded error %q (%v)", failed.String, err)
	}
}
