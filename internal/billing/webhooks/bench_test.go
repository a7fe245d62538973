package webhooks

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
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/outbound"
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
	h := newHarness(b, d)
	nextEvent := newSubscriptionEvents(b)

	b.Run("direct", func(b *testing.B) {
		b.SetParallelism(parallelism)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				id, body := nextEvent("direct")
				if _, err := h.svc.IngestEvent(context.Background(), billing.ProviderWeb, id, "customer.subscription.updated", body); err != nil {
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
	template := string(fixture(b, "web/customer.subscription.updated.json"))
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
func sendOverHTTP(b *testing.B, h *harness, nextEvent func(string) (string, []byte)) {
	srv := httptest.NewServer(h.handler)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders * 2}}
	url := srv.URL + "/billing/webhooks/web"
	run := b.Name()
	b.SetParallelism(parallelism)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, body := nextEvent(run)
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("Web-Signature", stripe.SignHeader(testWebSecret, h.clock(), body))
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
			h := newHarness(b, open(b), withServeBatching)
			minimal := newMinimalReceiver(b, open(b), testWebSecret, h.clock)
			var tollgate, baseline sample
			alternate(b.N,
				func() { tollgate.add(sendFor(b, h.handler, h.clock, nextEvent)) },
				func() { baseline.add(sendFor(b, minimal, h.clock, nextEvent)) })
			transactions, events := h.batches()
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
// pair of slices:
//
//	TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test go test -run '^$' -bench IngestGrowth -benchtime 10x ./internal/billing/webhooks
func BenchmarkIngestGrowth(b *testing.B) {
	nextEvent := newSubscriptionEvents(b)
	small, large := newHarness(b, dbtest.Postgres(b), withServeBatching), newHarness(b, dbtest.Postgres(b), withServeBatching)
	for h, n := range map[*harness]int{small: 10_000, large: 1_000_000} {
		if _, err := h.db.Exec(`insert into provider_events (provider, provider_event_id, event_type, received_at, processed_at, created_at, updated_at)
			select 'web', 'evt_stored_' || g, 'customer.subscription.updated', $1, $1, $1, $1 from generate_series(1, $2) g`, fixtureNow, n); err != nil {
			b.Fatal(err)
		}
		if _, err := h.db.Exec("analyze provider_events"); err != nil {
			b.Fatal(err)
		}
	}
	var tenThousand, million sample
	alternate(b.N,
		func() { tenThousand.add(sendFor(b, small.handler, small.clock, nextEvent)) },
		func() { million.add(sendFor(b, large.handler, large.clock, nextEvent)) })
	b.ReportMetric(tenThousand.perSecond(), "10k-events/s")
	b.ReportMetric(million.perSecond(), "1M-events/s")
	b.ReportMetric(million.perSecond()/tenThousand.perSecond(), "ratio")
}

// BenchmarkOutboundWebhooks is ingestion over HTTP with outbound webhooks off and on, side
// by side: each on a database of its own, in alternating slices of time. With the feature
// on, each change also records its entitlements.changed event in the transaction, and a
// deliverer in the same process signs and POSTs every event to a receiver that answers 204.
// The deliverer runs only in the on slices, so all its work is counted against them. It
// reports both rates and on/off, the feature's cost to ingestion (docs/performance.md).
// The stream is the worst case: every event a new subscription of a new user, so every
// event is a change. Each b.N is one pair of slices:
//
//	TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable go test -run '^$' -bench OutboundWebhooks -benchtime 16x ./internal/billing/webhooks
func BenchmarkOutboundWebhooks(b *testing.B) {
	compareOutbound(b, billing.ProviderWeb, newSubscriptionEvents(b), delivered)
}

// BenchmarkOutboundWebhooksCheckouts is BenchmarkOutboundWebhooks on the stream a web
// provider sends for new customers: every checkout's events in the order they are sent,
// each checkout a new user (newCheckoutEvents). Most of them change no answer.
func BenchmarkOutboundWebhooksCheckouts(b *testing.B) {
	compareOutbound(b, billing.ProviderWeb, newCheckoutEvents(b), delivered)
}

// BenchmarkOutboundWebhooksRenewals is BenchmarkOutboundWebhooks on the stream a mobile
// provider sends for new subscribers and their renewals (newRenewalEvents), where changes
// are far more common than in a web stream: every other event changes an answer.
func BenchmarkOutboundWebhooksRenewals(b *testing.B) {
	compareOutbound(b, billing.ProviderMobile, newRenewalEvents(b), delivered)
}

// BenchmarkOutboundWebhooksParts splits the cost of BenchmarkOutboundWebhooks (worst) and
// BenchmarkOutboundWebhooksRenewals (renewals) by part, on their streams, each part against
// the feature off: detecting changes alone (for a hook, with no outbox), then recording
// them too (with no deliverer running), and a control with the feature off on both sides,
// which shows the method's own bias and spread (docs/performance.md).
func BenchmarkOutboundWebhooksParts(b *testing.B) {
	streams := []struct {
		name, provider string
		events         func(*testing.B) func(string) (string, []byte)
	}{
		{"worst", billing.ProviderWeb, newSubscriptionEvents},
		{"renewals", billing.ProviderMobile, newRenewalEvents},
	}
	for _, stream := range streams {
		for _, part := range []outboundPart{control, detected, recorded} {
			b.Run(stream.name+"/"+part.String(), func(b *testing.B) { compareOutbound(b, stream.provider, stream.events(b), part) })
		}
	}
}

// outboundPart is how much of the feature the on side of compareOutbound runs.
type outboundPart int

const (
	control   outboundPart = iota // none: the feature off on both sides
	detected                      // changes detected and told to a hook; no outbox
	recorded                      // changes recorded in the outbox; no deliverer runs
	delivered                     // changes recorded, and delivered by a deliverer in the process
)

func (p outboundPart) String() string {
	return [...]string{"control", "detected", "recorded", "delivered"}[p]
}

func compareOutbound(b *testing.B, provider string, nextEvent func(string) (string, []byte), part outboundPart) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	for _, engine := range []string{"postgres", "sqlite"} {
		open := map[string]func(testing.TB) *db.DB{"postgres": dbtest.Postgres, "sqlite": dbtest.SQLite}[engine]
		b.Run(engine, func(b *testing.B) {
			off := newHarness(b, open(b), withServeBatching)
			var on *harness
			if part >= recorded {
				on = newHarness(b, open(b), withServeBatching, withOutbound)
			} else {
				on = newHarness(b, open(b), withServeBatching)
			}
			var changes atomic.Int64
			run := func(context.Context) {}
			switch part {
			case detected:
				on.svc.OnBillingChange(func(context.Context, string) { changes.Add(1) })
			case delivered:
				del := outbound.New(on.db, outbound.Options{URL: receiver.URL, Key: []byte("bench-key-bench-key-bench-key"), Clock: on.clock})
				on.svc.OnBillingChange(func(context.Context, string) { del.Wake() })
				run = del.Run
			}
			var offRate, onRate sample
			sendOff := func() sample { return sendProviderFor(b, provider, off.handler, off.clock, nextEvent) }
			sendOn := func() sample {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); run(ctx) }()
				defer func() { cancel(); <-done }()
				return sendProviderFor(b, provider, on.handler, on.clock, nextEvent)
			}
			// Not counted: each side's first slice warms its connections, whose
			// statements Postgres plans anew on each for the first few runs, which
			// costs the heavier ones more.
			sendOff()
			sendOn()
			warm, _ := outboxCounts(b, on.db)
			changes.Store(0)
			alternate(b.N, func() { offRate.add(sendOff()) }, func() { onRate.add(sendOn()) })
			b.ReportMetric(offRate.perSecond(), "off-events/s")
			b.ReportMetric(onRate.perSecond(), "on-events/s")
			b.ReportMetric(onRate.perSecond()/offRate.perSecond(), "on/off")
			switch part {
			case detected:
				b.ReportMetric(float64(changes.Load())/float64(onRate.events), "changes/event")
			case recorded, delivered:
				count, sent := outboxCounts(b, on.db)
				if count -= warm; count == 0 {
					b.Fatal("no event recorded")
				}
				b.ReportMetric(float64(count)/float64(onRate.events), "changes/event")
				if part == delivered {
					b.ReportMetric(float64(sent-warm)/float64(count), "delivered/recorded")
				}
			}
		})
	}
}

// outboxCounts says how many events the outbox has recorded, and delivered, all told.
func outboxCounts(b *testing.B, d *db.DB) (recorded, delivered int) {
	err := d.QueryRow(`select (select count(*) from outbound_deliveries) + (select count(*) from outbound_new_events),
		(select count(delivered_at) from outbound_deliveries)`).Scan(&recorded, &delivered)
	if err != nil {
		b.Fatal(err)
	}
	return recorded, delivered
}

// checkoutEventTypes are the events a web provider sends for a new customer's subscription
// checkout, in the order it sends them (Stripe's Checkout, subscription mode). tollgate
// applies the subscription events and the payment; it stores the rest and ignores them.
var checkoutEventTypes = []string{
	"customer.created", "customer.updated", "payment_method.attached", "invoice.created", "invoice.finalized",
	"customer.subscription.created", "payment_intent.created", "payment_intent.succeeded", "charge.succeeded",
	"invoice.paid", "invoice.payment_succeeded", "customer.subscription.updated", "checkout.session.completed",
}

// newCheckoutEvents makes the events of checkouts, one after another, each a new user's
// (checkoutEventTypes). The three tollgate applies are the fixtures; the others are the
// invoice fixture under their type, about the size of the objects they carry.
func newCheckoutEvents(b *testing.B) func(run string) (id string, body []byte) {
	applied := map[string]string{
		"customer.subscription.created": string(fixture(b, "web/customer.subscription.created.json")),
		"customer.subscription.updated": string(fixture(b, "web/customer.subscription.updated.json")),
		"invoice.payment_succeeded":     string(fixture(b, "web/invoice.payment_succeeded.json")),
	}
	var seq atomic.Int64
	return func(run string) (string, []byte) {
		n := seq.Add(1) - 1
		checkout, eventType := n/int64(len(checkoutEventTypes)), checkoutEventTypes[n%int64(len(checkoutEventTypes))]
		body, ok := applied[eventType]
		if !ok {
			body = strings.Replace(applied["invoice.payment_succeeded"], `"type": "invoice.payment_succeeded"`, `"type": "`+eventType+`"`, 1)
		}
		id := fmt.Sprintf("evt_bench_%s_%d", run, n)
		body = strings.NewReplacer(
			"evt_1TESTsubCreated000000001", id, "evt_1TESTsubUpdated000000001", id, "evt_1TESTinvPaid00000000001", id,
			"sub_1TESTa1B2c3D4e5F6g7H8i9", fmt.Sprintf("sub_bench_%s_%d", run, checkout),
			"cus_TESTa1B2c3D4e5", fmt.Sprintf("cus_bench_%s_%d", run, checkout),
			"5a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d", fmt.Sprintf("00000000-0000-4000-8000-%012d", checkout),
		).Replace(body)
		return id, []byte(body)
	}
}

// renewalEventTypes are the events a mobile provider sends for a new subscriber and the
// subscription's first two renewals, in pairs sent together (Adapty: each purchase or
// renewal, then the access level it updated). Each pair changes the subscriber's answer
// once: whichever of the two is applied first.
var renewalEventTypes = []string{
	"subscription_started", "access_level_updated",
	"subscription_renewed", "access_level_updated",
	"subscription_renewed", "access_level_updated",
}

// renewalStride is how many subscribers' pairs come between two pairs of one subscriber:
// renewals are a month apart, so a subscriber's pairs do not arrive together, while the
// two events of a pair do.
const renewalStride = 512

// newRenewalEvents makes the mobile events of subscribers (renewalEventTypes), each a new
// user, renewalStride subscribers at a time, from the renewal fixture: each event a minute
// after the one before it, each renewal a month more of the subscription. It gives no id:
// tollgate derives a mobile event's.
func newRenewalEvents(b *testing.B) func(run string) (id string, body []byte) {
	template := strings.NewReplacer(
		`"subscription_renewed"`, `"{type}"`,
		"2026-11-03T06:41:17.902000+0000", "{at}",
		"2026-12-03T06:40:59.000000+0000", "{expires}",
		"6b0e2d74-9c31-4a8f-b5e2-1f7d3a9c4e68", "{profile}",
		"0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a", "{user}",
		"GPA.3372-8841-2290-55716..1", "{transaction}",
		"GPA.3372-8841-2290-55716", "{original}",
	).Replace(string(fixture(b, "mobile/subscription_renewed.json")))
	const mobileTime = "2006-01-02T15:04:05.000000-0700"
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	pairs := int64(len(renewalEventTypes) / 2)
	var seq atomic.Int64
	return func(run string) (string, []byte) {
		n := seq.Add(1) - 1
		pair, second := n/2, n%2
		group, round := pair/(renewalStride*pairs), pair/renewalStride%pairs
		subscriber := group*renewalStride + pair%renewalStride
		nth := int(round*2 + second)
		original := fmt.Sprintf("GPA.bench-%s-%d", run, subscriber)
		body := strings.NewReplacer(
			"{type}", renewalEventTypes[nth],
			"{at}", start.Add(time.Duration(nth)*time.Minute).Format(mobileTime),
			"{expires}", start.AddDate(0, 1+nth/2, 0).Format(mobileTime),
			"{profile}", fmt.Sprintf("00000000-0000-4000-9000-%012d", subscriber),
			"{user}", fmt.Sprintf("00000000-0000-4000-8000-%012d", subscriber),
			"{transaction}", fmt.Sprintf("%s..%d", original, round),
			"{original}", original,
		).Replace(template)
		return "", []byte(body)
	}
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
					req.Header.Set("Authorization", testMobileSecret)
				} else {
					req.Header.Set("Web-Signature", stripe.SignHeader(testWebSecret, clock(), body))
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
func withServeBatching(o *options) {
	c, err := config.Load(func(name string) string {
		if strings.HasPrefix(name, "INGEST_BATCH_") {
			return os.Getenv(name)
		}
		return ""
	})
	if err != nil {
		panic(err)
	}
	o.batching = pipeline.Batching{Size: c.Batching.Size, Wait: c.Batching.Wait}
}
