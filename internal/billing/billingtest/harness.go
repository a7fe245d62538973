// Package billingtest is the billing packages' test kit: billing wired as serve wires it
// (the pipeline applies, the reader answers, the webhook routes receive) over a real
// database, with a settable clock, a log tests can read, and builders for each store's
// deliveries. Only tests import it.
package billingtest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/adapty"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/billing/stripe/mirror"
	"github.com/tollgate/tollgate/internal/billing/webhooks"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/logcapture"
)

const (
	WebSecret    = "whsec_test_secret"
	MobileSecret = "mobile-test-secret"
	// FixtureUser is the identity user behind the web fixtures (metadata.user_id) and
	// subscription_started.json (customer_user_id).
	FixtureUser = "5a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d"
)

// Now lies inside the fixtures' first billing period (2026-10-01 .. 2026-11-01); a
// harness's clock starts there.
var Now = time.Date(2026, 10, 15, 12, 0, 0, 0, time.UTC)

// PlansYAML is the plans file every harness syncs: free by default, and pro sold on the
// web and in the app.
const PlansYAML = `
plans:
  free:
    name: Free
    default: true
    entitlements:
      - {name: projects, value: 1}
  pro:
    name: Pro
    entitlements:
      - {name: projects, value: 10}
      - {name: exports, value: true}
    web_prices: [price_1TESTmonthlyPro000001, price_old_shape]
    mobile_products: [com.example.app.pro.monthly, pro_subscription, {id: pro_pass, lasts: 30d}, pro_nonrenewing_undated]
`

// Options are what a harness wires differently, as the configuration would.
type Options struct {
	MountWeb                bool // the web provider's route (off in sync-engine mode)
	WebSecret, MobileSecret string
	SyncEngineSchema        string
	OutboundWebhooks        bool
	AnswersMaxAge           time.Duration
	Extra                   []billing.Adapter // adapters beside the two providers'
	Batching                pipeline.Batching
}

// Option changes one of the Options.
type Option func(*Options)

// WithoutWebRoute leaves the web provider without a route, as sync-engine mode does.
func WithoutWebRoute(o *Options) { o.MountWeb = false }

// WithAnswers keeps answers for a minute, as ANSWERS_MAX_AGE would.
func WithAnswers(o *Options) { o.AnswersMaxAge = time.Minute }

// WithOutbound records entitlement changes for outbound webhooks.
func WithOutbound(o *Options) { o.OutboundWebhooks = true }

// WithAdapters adds stores beside the web and mobile providers.
func WithAdapters(a ...billing.Adapter) Option {
	return func(o *Options) { o.Extra = append(o.Extra, a...) }
}

// Stack is billing wired as serve wires it: the pipeline applies, the reader answers.
type Stack struct {
	*pipeline.Pipeline
	*reader.Reader
	db  *db.DB
	now func() time.Time
}

// SyncPlans writes the plans file into the database, as "plans sync" does.
func (s *Stack) SyncPlans(ctx context.Context, list []plans.PlanConfig) ([]string, error) {
	changes, err := plans.Sync(ctx, s.db, list, s.now().UTC())
	if err == nil && len(changes) > 0 {
		s.Forget("*")
	}
	return changes, err
}

// IngestEvent applies a verified event, as its webhook would once verified and named.
func (s *Stack) IngestEvent(ctx context.Context, provider, id, eventType string, body []byte) (pipeline.Processed, error) {
	return s.Ingest(ctx, provider, billing.Event{ID: id, Type: eventType}, body)
}

// Harness is the billing handler tree over a real database, with a settable clock and a
// log that tests can read.
type Harness struct {
	T       testing.TB
	DB      *db.DB
	Svc     *Stack
	Handler http.Handler
	Logs    *logcapture.Buffer // what Log wrote, at debug and above
	Log     *slog.Logger
	Metrics *prometheus.Registry
	mu      sync.Mutex
	now     time.Time
}

// New wires billing over d with the plans of PlansYAML synced.
func New(t testing.TB, d *db.DB, opts ...Option) *Harness {
	t.Helper()
	h := &Harness{T: t, DB: d, now: Now, Logs: &logcapture.Buffer{}, Metrics: prometheus.NewRegistry()}
	o := Options{MountWeb: true, WebSecret: WebSecret, MobileSecret: MobileSecret}
	for _, opt := range opts {
		opt(&o)
	}
	log := slog.New(slog.NewTextHandler(h.Logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.Log = log
	adapters := []billing.Adapter{
		stripe.New(o.WebSecret),
		adapty.New(o.MobileSecret, map[string]string{"subscription_renewal_cancelled": "subscription_cancelled"}),
	}
	adapters = append(adapters, o.Extra...)
	routed := adapters
	if !o.MountWeb {
		routed = adapters[1:]
	}
	var m plans.Mirror // nil unless in sync_engine mode: never a nil *mirror.Mirror
	if o.SyncEngineSchema != "" {
		m = mirror.New(d, o.SyncEngineSchema, log)
	}
	catalogues := &plans.Catalogues{}
	h.Svc = &Stack{
		Pipeline: pipeline.New(d, log, pipeline.Options{
			Adapters: adapters, Catalogues: catalogues, Mirror: m, OutboundWebhooks: o.OutboundWebhooks,
			Batching: o.Batching, Registerer: h.Metrics, Clock: h.Clock,
		}),
		Reader: reader.New(d, log, reader.Options{AnswersMaxAge: o.AnswersMaxAge, Catalogues: catalogues, Mirror: m, Clock: h.Clock}),
		db:     d, now: h.Clock,
	}
	h.Svc.OnCommit(h.Svc.Forget)
	mux := http.NewServeMux()
	webhooks.New(h.Svc.Pipeline, log, webhooks.Options{Adapters: routed, MaxBody: 1 << 20, Clock: h.Clock}).Routes(mux, "billing")
	h.Handler = mux
	list, err := plans.ParsePlans([]byte(PlansYAML))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Svc.SyncPlans(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	return h
}

// Batches says how many transactions of webhook events have committed, and how many
// events they held (tollgate_ingest_batch_size).
func (h *Harness) Batches() (transactions, events float64) {
	families, err := h.Metrics.Gather()
	if err != nil {
		h.T.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "tollgate_ingest_batch_size" {
			hist := f.GetMetric()[0].GetHistogram()
			return float64(hist.GetSampleCount()), hist.GetSampleSum()
		}
	}
	h.T.Fatal("no tollgate_ingest_batch_size")
	return 0, 0
}

// Clock is the harness's now, which billing reads as its clock.
func (h *Harness) Clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

// SetNow moves the harness's clock.
func (h *Harness) SetNow(t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = t
}

// Post sends body to path through the handler tree.
func (h *Harness) Post(path string, body []byte, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.Handler.ServeHTTP(rec, req)
	return rec
}

// SendWeb delivers body to the web route, signed with WebSecret at the harness's now.
func (h *Harness) SendWeb(body []byte) *httptest.ResponseRecorder {
	return h.Post("/billing/webhooks/web", body, http.Header{"Web-Signature": {stripe.SignHeader(WebSecret, h.Clock(), body)}})
}

// SendMobile delivers body to the mobile route with MobileSecret.
func (h *Harness) SendMobile(body []byte) *httptest.ResponseRecorder {
	return h.Post("/billing/webhooks/mobile", body, http.Header{"Authorization": {MobileSecret}})
}

// MustSend delivers body and fails the test unless it is answered 200 {"received":true}.
// It returns the answer's headers, which say what became of the event.
func (h *Harness) MustSend(provider string, body []byte) http.Header {
	h.T.Helper()
	var rec *httptest.ResponseRecorder
	if provider == billing.ProviderWeb {
		rec = h.SendWeb(body)
	} else {
		rec = h.SendMobile(body)
	}
	if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"received":true}` {
		h.T.Fatalf("%s delivery: %d %s", provider, rec.Code, rec.Body)
	}
	return rec.Header()
}

// Answer is a user's billing answer in brief: subscribed, status, plan and period end.
func (h *Harness) Answer(t testing.TB, user string) string {
	t.Helper()
	v, err := h.Svc.View(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	status, end := "none", "none"
	if v.Status != nil {
		status = *v.Status
	}
	if v.CurrentPeriodEnd != nil {
		end = Stamp(*v.CurrentPeriodEnd)
	}
	return fmt.Sprintf("%t %s %s %s", v.Subscribed, status, v.Plan.Key, end)
}
