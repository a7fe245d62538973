package app

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/identity"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
	"github.com/tollgate/tollgate/internal/tcpproxy"
)

// proxiedPostgres is a fresh Postgres schema reached through a proxy that tests can cut or
// stall, and the direct URL to check what was stored.
func proxiedPostgres(t *testing.T) (proxied, direct string, proxy *tcpproxy.Proxy) {
	return dbtest.PostgresBehindProxy(t)
}

// webEvent is the updated fixture as a new event of a new subscription named n.
func webEvent(t *testing.T, n string) []byte {
	t.Helper()
	b, err := os.ReadFile("../billing/testdata/web/customer.subscription.updated.json")
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("sub_1TESTa1B2c3D4e5F6g7H8i9"), []byte("sub_"+n))
	return bytes.Replace(b, []byte(`"evt_`), []byte(`"evt_`+n+`_`), 1)
}

// webRequest is body POSTed to the web webhook, signed as Stripe signs.
func webRequest(base string, body []byte) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, base+"/billing/webhooks/web", bytes.NewReader(body))
	req.Header.Set("Stripe-Signature", stripe.SignHeader(webSecret, time.Now(), body))
	return req
}

// postWeb delivers body and returns the status.
func postWeb(client *http.Client, base string, body []byte) (int, error) {
	status, _, err := send(client, webRequest(base, body))
	return status, err
}

// load runs senders that each deliver new web events (named prefix_SENDER_N) until ctx ends
// or answer says stop, calling answer with every outcome; wait waits for them all.
func load(ctx context.Context, t *testing.T, senders int, base, prefix string, answer func(name string, body []byte, status int, err error) (more bool)) (wait func()) {
	var wg sync.WaitGroup
	for sender := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 20 * time.Second}
			for i := 0; ctx.Err() == nil; i++ {
				name := fmt.Sprintf("%s_%d_%d", prefix, sender, i)
				body := webEvent(t, name)
				status, err := postWeb(client, base, body)
				if !answer(name, body, status, err) {
					return
				}
			}
		}()
	}
	return wg.Wait
}

// send does req and returns its status and Retry-After.
func send(client *http.Client, req *http.Request) (int, string, error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After"), nil
}

// TestStuckDatabaseAnswers503WithinDBTimeout: Postgres stops answering (connections stay
// open, nothing comes back). A webhook, an API call and a form each get their 503 within
// DB_TIMEOUT (and pgx's cancel), and on SIGTERM the process exits 0 within SHUTDOWN_TIMEOUT.
// The API call is the first of its token's session, whose user is recorded off the request
// path: it waits for the database once, not twice.
func TestStuckDatabaseAnswers503WithinDBTimeout(t *testing.T) {
	proxied, _, proxy := proxiedPostgres(t)
	fake := identitytest.New(t)
	fake.AddUser("stuck@example.test", "password1")
	env := testEnv(t, map[string]string{
		"DATABASE_URL": proxied, "DB_TIMEOUT": "2s", "SHUTDOWN_TIMEOUT": "4s", "AUTH_URL": fake.URL,
	})
	stop := startServe(t, env)
	base := env["PUBLIC_URL"]
	session, err := identity.New(fake.URL, "", nil).SignInWithPassword(context.Background(), "stuck@example.test", "password1")
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	signIn := func() *http.Response {
		req, _ := http.NewRequest(http.MethodPost, base+"/session", strings.NewReader(url.Values{"email": {"stuck@example.test"}, "password": {"password1"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := signIn(); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in before the stall: %d", resp.StatusCode)
	}

	proxy.Stall()
	limit := 2*time.Second + 2*time.Second // DB_TIMEOUT, plus pgx's cancel request and deadline delays
	client := &http.Client{Timeout: 20 * time.Second}
	timed := func(what string, req *http.Request) {
		t.Helper()
		start := time.Now()
		status, retryAfter, err := send(client, req)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if status != http.StatusServiceUnavailable || retryAfter == "" || took > limit {
			t.Errorf("%s with the database stuck: %d (Retry-After %q) after %v, want 503 within %v", what, status, retryAfter, took, limit)
		}
		t.Logf("%s: 503 after %v", what, took)
	}
	timed("webhook", webRequest(base, webEvent(t, "stuck")))
	api, _ := http.NewRequest(http.MethodGet, base+"/api/v1/me", nil)
	api.Header.Set("Authorization", "Bearer "+session.AccessToken)
	timed("API call", api)
	start := time.Now()
	if resp := signIn(); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || time.Since(start) > limit {
		// The session cookie makes the store read first.
		t.Errorf("form with the database stuck: %d after %v, want 503 with Retry-After within %v", resp.StatusCode, time.Since(start), limit)
	}
	if code, logs := stop(); code != 0 {
		t.Fatalf("serve exited %d: %s", code, logs)
	}
}

// TestSIGTERMUnderLoadWithAStuckDatabase: a serve process takes webhooks from 8 senders,
// then Postgres stops answering and the process gets SIGTERM with requests in flight. They
// get their 503 within DB_TIMEOUT, the process exits 0 within SHUTDOWN_TIMEOUT + 1 s, and
// every webhook answered 200 is stored.
func TestSIGTERMUnderLoadWithAStuckDatabase(t *testing.T) {
	proxied, direct, proxy := proxiedPostgres(t)
	env := testEnv(t, map[string]string{"DATABASE_URL": proxied, "DB_TIMEOUT": "1s", "SHUTDOWN_TIMEOUT": "4s"})
	bin := buildBinary(t)
	p := startProcess(t, bin, env)
	waitFor(t, func() bool { return healthcheckExit(t, bin, p.addr) == 0 })

	var mu sync.Mutex
	var accepted []string
	statuses := map[int]int{}
	wait := load(context.Background(), t, 8, env["PUBLIC_URL"], "term", func(name string, _ []byte, status int, err error) bool {
		if err != nil {
			return false // the server is gone
		}
		mu.Lock()
		defer mu.Unlock()
		statuses[status]++
		if status == http.StatusOK {
			accepted = append(accepted, name)
		}
		return true
	})
	counted := func(cond func() bool) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return cond() }
	}
	waitFor(t, counted(func() bool { return len(accepted) >= 20 })) // under load
	proxy.Stall()
	// A 503 says requests reach the stuck database and wait out DB_TIMEOUT there.
	waitFor(t, counted(func() bool { return statuses[http.StatusServiceUnavailable] > 0 }))
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	var exitErr error
	select {
	case exitErr = <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("serve still running 10 s after SIGTERM: %s", p.stderr)
	}
	took := time.Since(start)
	wait()
	if exitErr != nil || took > 5*time.Second {
		t.Fatalf("after SIGTERM with the database stuck: %v after %v, want exit 0 within 5 s: %s", exitErr, took, p.stderr)
	}
	if len(accepted) == 0 || statuses[http.StatusServiceUnavailable] == 0 {
		t.Fatalf("answers %v: want 200s before the stall and 503s during it", statuses)
	}

	proxy.Resume()
	check, err := sql.Open("pgx", direct)
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	for _, name := range accepted {
		var n int
		if err := check.QueryRow("select count(*) from provider_events where provider_event_id = $1", "evt_"+name+"_1TESTsubUpdated000000001").Scan(&n); err != nil || n != 1 {
			t.Fatalf("%s was answered 200 but is stored %d times (%v)", name, n, err)
		}
	}
	t.Logf("answers %v; exit after %v", statuses, took)
}

// TestOutageUnderLoadLosesNothing: 16 senders of unique events while Postgres is cut off
// for 5 s. Every 200 is stored once; the refused events, sent again, are all stored; the
// outage is logged as two warnings, not one line per refusal; no restart.
func TestOutageUnderLoadLosesNothing(t *testing.T) {
	t.Parallel() // its own processes, database and ports; it waits more than it works
	proxied, direct, proxy := proxiedPostgres(t)
	env := testEnv(t, map[string]string{"DATABASE_URL": proxied, "DB_TIMEOUT": "2s"})
	stop := startServe(t, env)
	base := env["PUBLIC_URL"]

	var mu sync.Mutex
	accepted, refused := map[string]bool{}, map[string][]byte{}
	ctx, stopSending := context.WithCancel(context.Background())
	wait := load(ctx, t, 16, base, "chaos", func(name string, body []byte, status int, err error) bool {
		ok := err == nil && status == http.StatusOK
		mu.Lock()
		if ok {
			accepted[name] = true
		} else {
			refused[name] = body
		}
		mu.Unlock()
		if !ok {
			time.Sleep(100 * time.Millisecond) // a provider backs off too
		}
		return true
	})
	counted := func(cond func() bool) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return cond() }
	}
	waitFor(t, counted(func() bool { return len(accepted) >= 50 })) // under load
	proxy.Cut()
	cutAt := time.Now()
	// The outage lasts until every sender has been refused a few times over, and five
	// seconds at least: the listeners retry every second meanwhile.
	waitFor(t, counted(func() bool { return len(refused) >= 48 }))
	time.Sleep(time.Until(cutAt.Add(5 * time.Second)))
	proxy.Start()
	before := 0
	counted(func() bool { before = len(accepted); return true })()
	waitFor(t, counted(func() bool { return len(accepted) >= before+50 })) // recovered, without a restart
	stopSending()
	wait()
	if len(refused) == 0 {
		t.Fatal("nothing was refused: the outage did not happen")
	}

	// The provider retries what was refused; the same server takes it.
	client := &http.Client{Timeout: 20 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for name, body := range refused {
		for {
			status, err := postWeb(client, base, body)
			if err == nil && status == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still refused after the outage: %d %v", name, status, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	check, err := sql.Open("pgx", direct)
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	stored := map[string]int{}
	rows, err := check.Query("select provider_event_id from provider_events")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		rows.Scan(&id)
		stored[id]++
	}
	rows.Close()
	unique := len(accepted) + len(refused)
	if len(stored) != unique {
		t.Fatalf("%d events stored, want the %d unique events sent", len(stored), unique)
	}
	for id, n := range stored {
		if n != 1 {
			t.Fatalf("%s stored %d times", id, n)
		}
	}
	for name := range accepted {
		if stored["evt_"+name+"_1TESTsubUpdated000000001"] != 1 {
			t.Fatalf("%s was answered 200 but is not stored", name)
		}
	}

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var unavailable int
	for _, line := range strings.Split(string(metrics), "\n") {
		if strings.HasPrefix(line, "tollgate_db_unavailable_total ") {
			fmt.Sscan(strings.TrimPrefix(line, "tollgate_db_unavailable_total "), &unavailable)
		}
	}
	if unavailable < len(refused) {
		t.Errorf("tollgate_db_unavailable_total = %d, want at least the %d refusals", unavailable, len(refused))
	}

	code, logs := stop()
	if code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	if n := strings.Count(logs, "database unavailable"); n != 1 {
		t.Errorf("the outage start was logged %d times, want once", n)
	}
	if n := strings.Count(logs, "database available again"); n != 1 || !strings.Contains(logs, "refused_requests=") {
		t.Errorf("the outage end was logged %d times, want once with the count", n)
	}
	if n := strings.Count(logs, "level=ERROR"); n != 0 {
		t.Errorf("%d ERROR lines during a %d-request outage, want none", n, len(refused))
	}
	if n := strings.Count(logs, "level=WARN"); n >= 10 {
		t.Errorf("%d WARN lines during a %v outage, want fewer than 10 (each listener warns once):\n%s", n, 5*time.Second, logs)
	}
	t.Logf("%d events accepted at once, %d refused and accepted on retry", len(accepted), len(refused))
}
