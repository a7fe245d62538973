package billing

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// BenchmarkWebhookIngest compares webhook ingestion through the real HTTP handler (a loopback
// server, signature verification, JSON, the transaction, the response) with the same
// transaction issued directly, both at 16 concurrent senders on Postgres. Every event is a new
// subscription of a new user, so each one does the full work: event row, provider
// subscription, customer and canonical subscription. The ratio of the two events/s figures
// is the HTTP layer's cost (docs/performance.md).
//
//	TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test go test -run '^$' -bench WebhookIngest -benchtime 5s ./internal/billing
func BenchmarkWebhookIngest(b *testing.B) {
	d := dbtest.Postgres(b)
	h := newHarness(b, d)
	template := string(fixture(b, "web/customer.subscription.updated.json"))
	var seq atomic.Int64
	nextEvent := func(run string) (string, []byte) {
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
	senders := 16
	parallelism := max(1, senders/runtime.GOMAXPROCS(0))

	b.Run("direct", func(b *testing.B) {
		b.SetParallelism(parallelism)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				id, body := nextEvent("direct")
				if _, err := h.svc.Ingest(context.Background(), ProviderWeb, id, webSubscriptionUpdated, body); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})

	b.Run("http", func(b *testing.B) {
		srv := httptest.NewServer(h.handler)
		defer srv.Close()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders * 2}}
		url := srv.URL + "/billing/webhooks/web"
		b.SetParallelism(parallelism)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, body := nextEvent("http")
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
				req.Header.Set("Web-Signature", SignWebHeader(testWebSecret, h.clock(), body))
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
	})
}
