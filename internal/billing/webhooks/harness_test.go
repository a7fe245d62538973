package webhooks

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/adapty"
	"github.com/tollgate/tollgate/internal/billing/mirror"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/logcapture"
)

const (
	testWebSecret    = "whsec_test_secret"
	testMobileSecret = "mobile-test-secret"
	// fixtureUser is the identity user behind the web fixtures (metadata.user_id) and
	// subscription_started.json (customer_user_id).
	fixtureUser = "5a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d"
)

// fixtureNow lies inside the fixtures' first billing period (2026-10-01 .. 2026-11-01).
var fixtureNow = time.Date(2026, 10, 15, 12, 0, 0, 0, time.UTC)

const testPlansYAML = `
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

// options are what a harness wires differently, as the configuration would.
type options struct {
	mountWeb                bool
	webSecret, mobileSecret string
	syncEngineSchema        string
	outboundWebhooks        bool
	answersMaxAge           time.Duration
	extra                   []billing.Adapter // adapters beside the two providers'
	batching                pipeline.Batching
}

type harnessOption func(*options)

func withoutWebRoute(o *options) { o.mountWeb = false }

// stack is billing wired as serve wires it: the pipeline applies, the reader answers.
type stack struct {
	*pipeline.Pipeline
	*reader.Reader
	db  *db.DB
	log *slog.Logger
	now func() time.Time
}

// SyncPlans writes the plans file into the database, as "plans sync" does.
func (s *stack) SyncPlans(ctx context.Context, list []plans.PlanConfig) ([]string, error) {
	changes, err := plans.Sync(ctx, s.db, list, s.now().UTC())
	if err == nil && len(changes) > 0 {
		s.Forget("*")
	}
	return changes, err
}

// IngestEvent applies a verified event, as its webhook would once verified and named.
func (s *stack) IngestEvent(ctx context.Context, provider, id, eventType string, body []byte) (pipeline.Processed, error) {
	return s.Ingest(ctx, provider, billing.Event{ID: id, Type: eventType}, body)
}

// harness is the billing handler tree over a real database, with a settable clock and a
// log that tests can read.
type harness struct {
	t       testing.TB
	db      *db.DB
	svc     *stack
	handler http.Handler
	mu      sync.Mutex
	now     time.Time
	logs    *logcapture.Buffer
	metrics *prometheus.Registry
}

func newHarness(t testing.TB, d *db.DB, opts ...harnessOption) *harness {
	t.Helper()
	h := &harness{t: t, db: d, now: fixtureNow, logs: &logcapture.Buffer{}, metrics: prometheus.NewRegistry()}
	o := options{mountWeb: true, webSecret: testWebSecret, mobileSecret: testMobileSecret}
	for _, opt := range opts {
		opt(&o)
	}
	log := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	adapters := []billing.Adapter{
		stripe.New(o.webSecret),
		adapty.New(o.mobileSecret, map[string]string{"subscription_renewal_cancelled": "subscription_cancelled"}),
	}
	adapters = append(adapters, o.extra...)
	routed := adapters
	if !o.mountWeb {
		routed = adapters[1:]
	}
	var m *mirror.Mirror
	if o.syncEngineSchema != "" {
		m = mirror.New(d, o.syncEngineSchema, log)
	}
	catalogues := &plans.Catalogues{}
	h.svc = &stack{
		Pipeline: pipeline.New(d, log, pipeline.Options{
			Adapters: adapters, Catalogues: catalogues, Mirror: m, OutboundWebhooks: o.outboundWebhooks,
			Batching: o.batching, Registerer: h.metrics, Clock: h.clock,
		}),
		Reader: reader.New(d, log, reader.Options{AnswersMaxAge: o.answersMaxAge, Catalogues: catalogues, Mirror: m, Clock: h.clock}),
		db:     d, log: log, now: h.clock,
	}
	h.svc.OnCommit(h.svc.Forget)
	mux := http.NewServeMux()
	New(h.svc.Pipeline, log, Options{Adapters: routed, MaxBody: 1 << 20, Clock: h.clock}).Routes(mux, "billing")
	h.handler = mux
	list, err := plans.ParsePlans([]byte(testPlansYAML))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.SyncPlans(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	return h
}

// batches says how many transactions of webhook events have committed, and how many
// events they held (tollgate_ingest_batch_size).
func (h *harness) batches() (transactions, events float64) {
	families, err := h.metrics.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "tollgate_ingest_batch_size" {
			hist := f.GetMetric()[0].GetHistogram()
			return float64(hist.GetSampleCount()), hist.GetSampleSum()
		}
	}
	h.t.Fatal("no tollgate_ingest_batch_size")
	return 0, 0
}

func (h *harness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

func (h *harness) setNow(t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = t
}

func (h *harness) post(path string, body []byte, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, req)
	return rec
}

func (h *harness) sendWeb(body []byte) *httptest.ResponseRecorder {
	return h.post("/billing/webhooks/web", body, http.Header{"Web-Signature": {stripe.SignHeader(testWebSecret, h.clock(), body)}})
}

func (h *harness) sendMobile(body []byte) *httptest.ResponseRecorder {
	return h.post("/billing/webhooks/mobile", body, http.Header{"Authorization": {testMobileSecret}})
}

// mustSend delivers body and fails the test unless it is answered 200 {"received":true}.
// It returns the answer's headers, which say what became of the event.
func (h *harness) mustSend(provider string, body []byte) http.Header {
	h.t.Helper()
	var rec *httptest.ResponseRecorder
	if provider == billing.ProviderWeb {
		rec = h.sendWeb(body)
	} else {
		rec = h.sendMobile(body)
	}
	if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"received":true}` {
		h.t.Fatalf("%s delivery: %d %s", provider, rec.Code, rec.Body)
	}
	return rec.Header()
}

func (h *harness) countEvents() int {
	h.t.Helper()
	var n int
	if err := h.db.QueryRow("select count(*) from provider_events").Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

type canonicalRow struct {
	Status    string
	PeriodEnd *time.Time
	Plan      string
	UserID    string
}

// canonical reads the canonical subscription for a provider subscription id, or nil.
func (h *harness) canonical(provider, subscriptionID string) *canonicalRow {
	h.t.Helper()
	var row canonicalRow
	var end sql.NullTime
	err := h.db.QueryRow(`select s.status, s.current_period_end, p.key, c.user_id
		from subscriptions s
		join provider_subscriptions ps on ps.id = s.provider_subscription_id
		join plans p on p.id = s.plan_id
		join billing_customers c on c.id = s.billing_customer_id
		where ps.provider = $1 and ps.provider_subscription_id = $2`, provider, subscriptionID).Scan(&row.Status, &end, &row.Plan, &row.UserID)
	if err == sql.ErrNoRows {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	if end.Valid {
		t := end.Time.UTC()
		row.PeriodEnd = &t
	}
	return &row
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edit decodes a JSON document, lets fn change it, and encodes it again.
func edit(t testing.TB, body []byte, fn func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// path walks nested objects: path(m, "data", "object") is m["data"]["object"].
func path(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		m = m[k].(map[string]any)
	}
	return m
}

// dumpTables renders every row of the tables, ordered by id, so that two dumps are equal
// exactly when no row was created, deleted or changed.
func (h *harness) dumpTables(tables ...string) string {
	h.t.Helper()
	var b strings.Builder
	for _, table := range tables {
		rows, err := h.db.Query("select * from " + table + " order by id")
		if err != nil {
			h.t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			values := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range values {
				ptrs[i] = &values[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				h.t.Fatal(err)
			}
			fmt.Fprint(&b, table)
			for i, v := range values {
				if raw, ok := v.([]byte); ok {
					v = string(raw)
				}
				fmt.Fprintf(&b, " %s=%v", cols[i], v)
			}
			b.WriteString("\n")
		}
		if err := rows.Err(); err != nil {
			h.t.Fatal(err)
		}
		rows.Close()
	}
	return b.String()
}
