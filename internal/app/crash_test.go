package app

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// TestKilledMidBatchLosesNothing: serve is killed (SIGKILL) while 16 senders keep its
// batches full. Every event it answered 200 is stored and applied exactly once; every
// other is either all there or not there at all; and once serve is back, the events the
// senders saw fail are delivered again, as providers do, and the state is whole.
func TestKilledMidBatchLosesNothing(t *testing.T) {
	t.Parallel() // its own processes, database and ports; it waits more than it works
	bin := buildBinary(t)
	template, err := os.ReadFile("../billing/testdata/web/customer.subscription.updated.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, engine := range []db.Engine{db.Postgres, db.SQLite} {
		t.Run(string(engine), func(t *testing.T) {
			dbURL := "sqlite:" + filepath.Join(t.TempDir(), "tollgate.db")
			if engine == db.Postgres {
				dbURL = dbtest.PostgresURL(t)
			}
			env := map[string]string{
				"APP_ENV": "production", "PUBLIC_URL": "https://billing.example.test", "FORMS": "off", "API": "off",
				"DATABASE_URL": dbURL, "WEB_WEBHOOK_SECRET": webSecret, "MOBILE_WEBHOOK_SECRET": mobileSecret, "PLANS_FILE": "../../config/plans.yml",
				"INGEST_BATCH_WAIT": "5ms", "LOG_FORMAT": "json",
			}
			serve := func() *process {
				env["ADDR"] = holdAddr(t)
				p := startProcess(t, bin, env)
				waitHealthy(t, bin, p)
				return p
			}
			event := func(n int) []byte {
				return []byte(strings.NewReplacer(
					"evt_1TESTsubUpdated000000001", fmt.Sprintf("evt_crash_%d", n),
					"sub_1TESTa1B2c3D4e5F6g7H8i9", fmt.Sprintf("sub_crash_%d", n),
					"cus_TESTa1B2c3D4e5", fmt.Sprintf("cus_crash_%d", n),
					"5a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d", fmt.Sprintf("00000000-0000-4000-8000-%012d", n),
				).Replace(string(template)))
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
			deliver := func(p *process, n int) (int, error) {
				body := event(n)
				req, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+"/billing/webhooks/web", bytes.NewReader(body))
				req.Header.Set("Web-Signature", stripe.SignHeader(webSecret, time.Now(), body))
				resp, err := client.Do(req)
				if err != nil {
					return 0, err
				}
				resp.Body.Close()
				return resp.StatusCode, nil
			}

			p := serve()
			plansSync := exec.Command(bin, "plans", "sync")
			for k, v := range env {
				plansSync.Env = append(plansSync.Env, k+"="+v)
			}
			if out, err := plansSync.CombinedOutput(); err != nil {
				t.Fatalf("plans sync: %v\n%s", err, out)
			}
			var next, answered atomic.Int64
			var mu sync.Mutex
			failed := map[int]bool{} // sent, and not answered 200
			var ok []int
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					for {
						n := int(next.Add(1))
						code, err := deliver(p, n)
						mu.Lock()
						if code == http.StatusOK {
							ok = append(ok, n)
						} else {
							failed[n] = true
						}
						mu.Unlock()
						if err != nil {
							return // the process is gone
						}
						answered.Add(1)
					}
				})
			}
			for deadline := time.Now().Add(30 * time.Second); answered.Load() < 400; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d deliveries answered in 30 s:\n%s", answered.Load(), p.stderr.String())
				}
			}
			p.cmd.Process.Signal(syscall.SIGKILL)
			wg.Wait()
			p.done <- <-p.done // seen, and left for the cleanup
			if len(failed) == 0 {
				t.Fatal("no delivery was in flight when the process was killed")
			}

			check := dbtest.Open(t, dbURL)
			for _, n := range ok {
				if got := eventTrace(t, check, n); got != "applied" {
					t.Errorf("event %d was answered 200 but is %s", n, got)
				}
			}
			for n := range failed {
				if got := eventTrace(t, check, n); got != "applied" && got != "absent" {
					t.Errorf("event %d, killed in flight, is %s", n, got)
				}
			}

			p = serve()
			for n := range failed {
				if code, err := deliver(p, n); err != nil || code != http.StatusOK {
					t.Fatalf("event %d delivered again: %d %v", n, code, err)
				}
			}
			sent := len(ok) + len(failed)
			var events, subscriptions, applied int
			err := check.QueryRow(`select (select count(*) from provider_events), (select count(*) from subscriptions),
				(select count(*) from provider_events where outcome = 'applied')`).Scan(&events, &subscriptions, &applied)
			if err != nil || events != sent || subscriptions != sent || applied != sent {
				t.Fatalf("%d sent: %d events (%d applied), %d subscriptions (%v)", sent, events, applied, subscriptions, err)
			}
		})
	}
}

// eventTrace says what the database holds of the n-th event of the crash test: "applied"
// (the event, its subscription's row naming it, and the canonical row), "absent"
// (nothing), or what part of it there is.
func eventTrace(t *testing.T, d *db.DB, n int) string {
	t.Helper()
	var events, named, canonical int
	err := d.QueryRow(`select
		(select count(*) from provider_events where provider_event_id = $1 and outcome = 'applied'),
		(select count(*) from provider_subscriptions where provider_subscription_id = $2 and last_event_id = $1),
		(select count(*) from subscriptions s join provider_subscriptions ps on ps.id = s.provider_subscription_id
			where ps.provider_subscription_id = $2 and s.status = 'active')`,
		fmt.Sprintf("evt_crash_%d", n), fmt.Sprintf("sub_crash_%d", n)).Scan(&events, &named, &canonical)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case events == 1 && named == 1 && canonical == 1:
		return "applied"
	case events+named+canonical == 0:
		return "absent"
	}
	return fmt.Sprintf("half-applied (event %d, provider row %d, canonical %d)", events, named, canonical)
}
