package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// BenchmarkCatchUpMemory is a first catch-up of a busy App Store history: 20,000
// notifications (Apple's pages of 20), every one new, on SQLite. It reports the peak live
// heap (as of each garbage collection, sampled every 5 ms) above what was live before it
// began — the stand-in, in the same process, holds the whole history, and garbage up to
// that size is allowed by GOGC, so the heap in use says little — and the notifications
// applied a second. Applied page by page, a long history is never held whole. 1,000 in
// CI's smoke run:
//
//	go test -run '^$' -bench CatchUpMemory -benchtime 1x ./internal/billing/reconcile
func BenchmarkCatchUpMemory(b *testing.B) {
	items := 20_000
	if testing.Short() || os.Getenv("CI") != "" && os.Getenv("TOLLGATE_BIG_BENCH") == "" {
		items = 1_000
	}
	if n, err := strconv.Atoi(os.Getenv("CATCHUP_ITEMS")); err == nil {
		items = n
	}
	for range b.N {
		b.StopTimer()
		s, a, api := billingtest.AppStoreAPI(b)
		h := billingtest.New(b, dbtest.SQLite(b), billingtest.WithAdapters(a))
		start := billingtest.Now.Add(-24 * time.Hour)
		for i := range items {
			n := billingtest.AppStoreNotification(fmt.Sprintf("busy-%05d", i), "DID_RENEW", "", fmt.Sprint(8_000_000+i%2_000),
				fmt.Sprintf("00000000-0000-4000-8000-%012d", i%2_000), start.Add(time.Duration(i)*time.Second), billingtest.Now.Add(30*24*time.Hour))
			if _, err := s.Send(n); err != nil {
				b.Fatal(err)
			}
		}
		hist := reconcile.NewHistory(h.DB, h.Svc.Pipeline, h.Log, reconcile.HistoryOptions{Provider: appstore.Provider,
			Environment: "Production", MaxBack: 180 * 24 * time.Hour, Read: api.NotificationHistory, Clock: h.Clock})
		runtime.GC()
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(live)
		before := live[0].Value.Uint64()
		var peak atomic.Uint64
		done := make(chan struct{})
		go func() {
			sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
			for {
				metrics.Read(sample)
				if v := sample[0].Value.Uint64(); v > peak.Load() {
					peak.Store(v)
				}
				select {
				case <-done:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		b.StartTimer()
		began := time.Now()
		sum, err := hist.CatchUp(context.Background(), start.Add(-time.Minute), pipeline.CatchUpOptions{})
		elapsed := time.Since(began)
		b.StopTimer()
		close(done)
		if err != nil || sum.Applied != items {
			b.Fatalf("%+v %v", sum, err)
		}
		b.ReportMetric(float64(peak.Load()-min(peak.Load(), before))/(1<<20), "peak-live-MB")
		b.ReportMetric(float64(items)/elapsed.Seconds(), "notifications/s")
	}
}
