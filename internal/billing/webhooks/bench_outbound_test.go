package webhooks_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/outbound"
)

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
			off := billingtest.New(b, open(b), withServeBatching)
			var on *billingtest.Harness
			if part >= recorded {
				on = billingtest.New(b, open(b), withServeBatching, billingtest.WithOutbound)
			} else {
				on = billingtest.New(b, open(b), withServeBatching)
			}
			var changes atomic.Int64
			run := func(context.Context) {}
			switch part {
			case detected:
				on.Svc.OnBillingChange(func(context.Context, string) { changes.Add(1) })
			case delivered:
				del := outbound.New(on.DB, outbound.Options{URL: receiver.URL, Key: []byte("bench-key-bench-key-bench-key"), Clock: on.Clock})
				on.Svc.OnBillingChange(func(context.Context, string) { del.Wake() })
				run = del.Run
			}
			var offRate, onRate sample
			sendOff := func() sample { return sendProviderFor(b, provider, off.Handler, off.Clock, nextEvent) }
			sendOn := func() sample {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); run(ctx) }()
				defer func() { cancel(); <-done }()
				return sendProviderFor(b, provider, on.Handler, on.Clock, nextEvent)
			}
			// Not counted: each side's first slice warms its connections, whose
			// statements Postgres plans anew on each for the first few runs, which
			// costs the heavier ones more.
			sendOff()
			sendOn()
			warm, _ := outboxCounts(b, on.DB)
			changes.Store(0)
			alternate(b.N, func() { offRate.add(sendOff()) }, func() { onRate.add(sendOn()) })
			b.ReportMetric(offRate.perSecond(), "off-events/s")
			b.ReportMetric(onRate.perSecond(), "on-events/s")
			b.ReportMetric(onRate.perSecond()/offRate.perSecond(), "on/off")
			switch part {
			case detected:
				b.ReportMetric(float64(changes.Load())/float64(onRate.events), "changes/event")
			case recorded, delivered:
				count, sent := outboxCounts(b, on.DB)
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
		"customer.subscription.created": string(billingtest.Fixture(b, "web/customer.subscription.created.json")),
		"customer.subscription.updated": string(billingtest.Fixture(b, "web/customer.subscription.updated.json")),
		"invoice.payment_succeeded":     string(billingtest.Fixture(b, "web/invoice.payment_succeeded.json")),
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
// after the one before it, each renewal a month more of the subscription (the Android one
// renewed, whose values it replaces). It gives no id:
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
	).Replace(string(billingtest.Fixture(b, "mobile/subscription_renewed.android.json")))
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
