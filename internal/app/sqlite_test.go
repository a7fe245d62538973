package app

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tollgate/internal/billing"
)

// TestCommandsBesideABusySQLiteServer: replay, plans sync and migrate, run while a serve
// process ingests from 16 senders on the same SQLite file, all succeed: write transactions
// take the lock up front and wait for it within the busy timeout.
func TestCommandsBesideABusySQLiteServer(t *testing.T) {
	env := testEnv(t, nil)
	bin := buildBinary(t)
	p := startProcess(t, bin, env)
	waitFor(t, func() bool { return healthcheckExit(t, bin, p.addr) == 0 })

	fixture, err := os.ReadFile("../billing/testdata/web/customer.subscription.updated.json")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stopSending := context.WithCancel(context.Background())
	var sent, refused atomic.Int64
	var wg sync.WaitGroup
	for sender := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 30 * time.Second}
			for i := 0; ctx.Err() == nil; i++ {
				body := bytes.ReplaceAll(fixture, []byte("sub_1TESTa1B2c3D4e5F6g7H8i9"), []byte(fmt.Sprintf("sub_busy_%d_%d", sender, i)))
				body = bytes.Replace(body, []byte(`"evt_`), []byte(fmt.Sprintf(`"evt_busy_%d_%d_`, sender, i)), 1)
				req, _ := http.NewRequest(http.MethodPost, env["PUBLIC_URL"]+"/billing/webhooks/web", bytes.NewReader(body))
				req.Header.Set("Stripe-Signature", billing.SignWebHeader(webSecret, time.Now(), body))
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					sent.Add(1)
				} else {
					refused.Add(1)
				}
			}
		}()
	}
	waitFor(t, func() bool { return sent.Load() >= 50 }) // the server is busy

	commands := [][]string{{"events", "replay"}, {"plans", "sync"}, {"events", "replay"}, {"migrate"}, {"events", "replay"}}
	for _, args := range commands {
		code, out, errOut := runCmd(context.Background(), env, args...)
		if code != 0 {
			t.Errorf("%s beside a busy server: exit %d: %s %s", strings.Join(args, " "), code, errOut, lastLine(out))
		}
	}
	stopSending()
	wg.Wait()
	if refused.Load() != 0 {
		t.Errorf("%d deliveries refused while the commands ran", refused.Load())
	}
	t.Logf("%d events ingested while %d commands ran", sent.Load(), len(commands))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
