package webhooks_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// BenchmarkWebhookIngest compares webhook ingestion through the real HTTP handler (a loopback
// server, signature verification, JSON, the transaction, the response) with the same
// transaction issued directly, both at 16 concurrent senders on Postgres. Every event is a new
// subscription of a new user, so each one does the full work: event row, provider
// subscription, customer and canonical subscription. The ratio of the two events/s figures
// is the HTTP layer's cost (docs/performance.md).
//
//	TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test go test -run '^$' -bench WebhookIngest -benchtime 5s ./internal/billing/webhooks
func BenchmarkWebhookIngest(b *testing.B) {
	d := dbtest.Postgres(b)
	h := billingtest.New(b, d)
	nextEvent := newSubscriptionEvents(b)

	b.Run("direct", func(b *testing.B) {
		b.SetParallelism(parallelism)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				id, body := nextEvent("direct")
				if _, err := h.Svc.IngestEvent(context.Background(), billing.ProviderWeb, id, "customer.subscription.updated", body); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})

	b.Run("http", func(b *testing.B) { sendOverHTTP(b, h, nextEvent) })
}

// senders is how many events are sent at once.
const senders = 16

var parallelism = max(1, senders/runtime.GOMAXPROCS(0))

// newSubscriptionEvents makes web events, each a new subscription of a new user on a
// mapped plan: the full work of ingestion, and a change of that user's billing answer.
func newSubscriptionEvents(b *testing.B) func(run string) (id string, body []byte) {
	template := string(billingtest.Fixture(b, "web/customer.subscription.updated.json"))
	var seq atomic.Int64
	return func(run string) (string, []byte) {
		n := seq.Add(1)
		id := fmt.Sprintf("evt_bench_%s_%d", run, n)
		body := strings.NewReplacer(
			"evt_1TESTsubUpdated000000001", id,
			"sub_1TESTa1B2c3D4e5F6g7H8i9", fmt.Sprintf("sub_bench_%s_%d", run, n),
			"cus_TESTa1B2c3D4e5", fmt.Sprintf("cus_bench_%s_%d", run, n),
			"5a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d", fmt.Sprintf("00000000-0000-4000-8000-%012d", n),
		).Replace(template)
		return id, []byte(body)
	}
}

// sendOverHTTP posts new events to h's handler over loopback HTTP at senders at once, and
// reports events/s.
func sendOverHTTP(b *testing.B, h *billingtest.Harness, nextEvent func(string) (string, []byte)) {
	srv := httptest.NewServer(h.Handler)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders * 2}}
	url := srv.URL + "/billing/webhooks/web"
	run := b.Name()
	b.SetParallelism(parallelism)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, body := nextEvent(run)
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("Web-Signature", stripe.SignHeader(billingtest.WebSecret, h.Clock(), body))
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkIngestVsMinimalReceiver runs tollgate's web webhook endpoint and a minimal
// receiver (minimalReceiver: signature, one JSON parse, one transaction of two upserts) side
// by side: the same stream over loopback HTTP from 16 senders, each on a database of its own
// of the same engine, in alternating slices of time. It reports both rates and p99
// latencies and their ratios, the "Speed" issue's measure of what ingestion costs beyond the
// least a correct receiver does (docs/performance.md). Each b.N is one pair of slices:
//
//	TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test go test -run '^$' -bench IngestVsMinimalReceiver -benchtime 16x ./internal/billing/webhooks
func BenchmarkIngestVsMinimalReceiver(b *testing.B) {
	nextEvent := newSubscriptionEvents(b)
	for _, engine := range []string{"postgres", "sqlite"} {
		open := map[string]func(testing.TB) *db.DB{"postgres": dbtest.Postgres, "sqlite": dbtest.SQLite}[engine]
		b.Run(engine, func(b *testing.B) {
			h := billingtest.New(b, open(b), withServeBatching)
			minimal := newMinimalReceiver(b, open(b), billingtest.WebSecret, h.Clock)
			var tollgate, baseline sample
			alternate(b.N,
				func() { tollgate.add(sendFor(b, h.Handler, h.Clock, nextEvent)) },
				func() { baseline.add(sendFor(b, minimal, h.Clock, nextEvent)) })
			transactions, events := h.Batches()
			b.ReportMetric(events/transactions, "events/commit")
			b.ReportMetric(tollgate.perSecond(), "tollgate-events/s")
			b.ReportMetric(baseline.perSecond(), "minimal-events/s")
			b.ReportMetric(tollgate.perSecond()/baseline.perSecond(), "rate-ratio")
			b.ReportMetric(float64(tollgate.p99().Microseconds())/1000, "tollgate-p99-ms")
			b.ReportMetric(float64(baseline.p99().Microseconds())/1000, "minimal-p99-ms")
			b.ReportMetric(float64(tollgate.p99())/float64(baseline.p99()), "p99-ratio")
		})
	}
}

// BenchmarkIngestGrowth is ingestion over HTTP into a Postgres database holding a million
// stored events against one holding ten thousand, side by side: what a long life costs
// ingestion (their indexes are deeper). The stored events are small; the same stream as
// BenchmarkIngestVsMinimalReceiver. It reports both rates and their ratio. Each b.N is one
// pair of slices. Seeding a million rows takes longer than the suite's budget allows, so the
// large side holds a million only with TOLLGATE_BIG_BENCH=1, and otherwise (CI's smoke run)
// twenty thousand:
//
//	TOLLGATE_BIG_BENCH=1 TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test go test -run '^$' -bench IngestGrowth -benchtime 10x ./internal/billing/webhooks
func BenchmarkIngestGrowth(b *testing.B) {
	large := 20_000
	if os.Getenv("TOLLGATE_BIG_BENCH") == "1" {
		large = 1_000_000
	}
	b.Logf("stored events: 10000 against %d", large)
	nextEvent := newSubscriptionEvents(b)
	smallH, largeH := billingtest.New(b, dbtest.Postgres(b), withServeBatching), billingtest.New(b, dbtest.Postgres(b), withServeBatching)
	for h, n := range map[*billingtest.Harness]int{smallH: 10_000, largeH: large} {
		if _, err := h.DB.Exec(`insert into provider_events (provider, provider_event_id, event_type, received_at, processed_at, created_at, updated_at)
			select 'web', 'evt_stored_' || g, 'customer.subscription.updated', $1, $1, $1, $1 from generate_series(1, $2) g`, billingtest.Now, n); err != nil {
			b.Fatal(err)
		}
		if _, err := h.DB.Exec("analyze provider_events"); err != nil {
			b.Fatal(err)
		}
	}
	var tenThousand, grown sample
	alternate(b.N,
		func() { tenThousand.add(sendFor(b, smallH.Handler, smallH.Clock, nextEvent)) },
		func() { grown.add(sendFor(b, largeH.Handler, largeH.Clock, nextEvent)) })
	b.ReportMetric(tenThousand.perSecond(), "10k-events/s")
	b.ReportMetric(grown.perSecond(), "large-events/s")
	b.ReportMetric(grown.perSecond()/tenThousand.perSecond(), "ratio")
}

// slice is how long one side of a side-by-side benchmark sends before the other's turn.
const slice = 500 * time.Millisecond

// alternate runs pairs slices of a and b, in turns (a then b, then b then a, …) so that drift
// in the machine or the databases falls on both sides alike.
func alternate(pairs int, a, b func()) {
	for i := range pairs {
		if i%2 == 0 {
			a()
			b()
		} else {
			b()
			a()
		}
	}
}

// sample sums answered events, the time they took, and each one's latency.
type sample struct {
	events    int
	elapsed   time.Duration
	latencies []time.Duration
}

func (s *sample) add(more sample) {
	s.events, s.elapsed = s.events+more.events, s.elapsed+more.elapsed
	s.latencies = append(s.latencies, more.latencies...)
}

func (s sample) perSecond() float64 { return float64(s.events) / s.elapsed.Seconds() }

func (s sample) p99() time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	sorted := slices.Clone(s.latencies)
	slices.Sort(sorted)
	return sorted[len(sorted)*99/100]
}

// sendFor posts new signed events to handler over loopback HTTP, senders at once, for a
// slice, and says how many were answered, in what time, and how long each took.
func sendFor(b *testing.B, handler http.Handler, clock func() time.Time, nextEvent func(string) (string, []byte)) sample {
	return sendProviderFor(b, billing.ProviderWeb, handler, clock, nextEvent)
}

// sendProviderFor is sendFor to provider's endpoint, each event authenticated as that
// provider does.
func sendProviderFor(b *testing.B, provider string, handler http.Handler, clock func() time.Time, nextEvent func(string) (string, []byte)) sample {
	srv := httptest.NewServer(handler)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders}}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	var all []time.Duration
	start := time.Now()
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			var mine []time.Duration
			defer func() { mu.Lock(); all = append(all, mine...); mu.Unlock() }()
			for time.Since(start) < slice {
				_, body := nextEvent(b.Name())
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/billing/webhooks/"+provider, bytes.NewReader(body))
				if provider == billing.ProviderMobile {
					req.Header.Set("Authorization", billingtest.MobileSecret)
				} else {
					req.Header.Set("Web-Signature", stripe.SignHeader(billingtest.WebSecret, clock(), body))
				}
				sent := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
				mine = append(mine, time.Since(sent))
			}
		})
	}
	wg.Wait()
	return sample{events: len(all), elapsed: time.Since(start), latencies: all}
}

// withServeBatching batches as serve does by default, or as INGEST_BATCH_SIZE and
// INGEST_BATCH_WAIT in the benchmark's environment say (docs/performance.md).
func withServeBatching(o *billingtest.Options) {
	c, err := config.Load(func(name string) string {
		if strings.HasPrefix(name, "INGEST_BATCH_") {
			return os.Getenv(name)
		}
		return ""
	})
	if err != nil {
		panic(err)
	}
	o.Batching = pipeline.Batching{Size: c.Batching.Size, Wait: c.Batching.Wait}
}
