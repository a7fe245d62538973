package pipeline_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

func TestRepeatDeliveryKeepsReceivedAt(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		started := billingtest.Fixture(t, "mobile/subscription_started.json")
		h.MustSend(billing.ProviderMobile, started)
		first := h.Event(t, billing.ProviderMobile, "mobile_synth_b263629dc986907d465c3431227b596f")

		h.SetNow(billingtest.Now.Add(90 * time.Second))
		changed := billingtest.Edit(t, started, func(m map[string]any) { m["email"] = "changed@example.test" })
		h.MustSend(billing.ProviderMobile, changed)
		second := h.Event(t, billing.ProviderMobile, "mobile_synth_b263629dc986907d465c3431227b596f")

		if h.CountEvents() != 1 {
			t.Fatalf("%d rows after a repeat, want 1", h.CountEvents())
		}
		if !second.ReceivedAt.Equal(first.ReceivedAt) {
			t.Fatalf("received_at moved from %v to %v", first.ReceivedAt, second.ReceivedAt)
		}
		if !second.ProcessedAt.After(first.ProcessedAt) {
			t.Fatalf("processed_at not rewritten: %v then %v", first.ProcessedAt, second.ProcessedAt)
		}
		if !strings.Contains(string(second.Payload), "changed@example.test") {
			t.Fatal("payload not rewritten by the repeat")
		}
	})
}

func TestConcurrentDeliveriesOfOneEvent(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		bodies := map[string][]byte{
			billing.ProviderWeb:    billingtest.Fixture(t, "web/customer.subscription.updated.json"),
			billing.ProviderMobile: billingtest.Fixture(t, "mobile/subscription_started.json"),
		}
		for provider, body := range bodies {
			var wg sync.WaitGroup
			codes := make([]int, 50)
			for i := range codes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if provider == billing.ProviderWeb {
						codes[i] = h.SendWeb(body).Code
					} else {
						codes[i] = h.SendMobile(body).Code
					}
				}()
			}
			wg.Wait()
			for i, c := range codes {
				if c != http.StatusOK {
					t.Fatalf("%s delivery %d answered %d", provider, i, c)
				}
			}
		}
		if n := h.CountEvents(); n != 2 {
			t.Fatalf("%d provider_events rows after 2×50 deliveries, want 2", n)
		}
		var subs int
		if err := d.QueryRow("select count(*) from subscriptions").Scan(&subs); err != nil {
			t.Fatal(err)
		}
		if subs != 2 {
			t.Fatalf("%d canonical subscriptions, want 2", subs)
		}
	})
}
