package app

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/logcapture"
)

// builtBinary is ./cmd/tollgate, built once for the tests that need real processes.
var builtBinary = sync.OnceValues(func() (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	dir, err := os.MkdirTemp("", "tollgate-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "tollgate")
	cmd := exec.Command(gobin, "build", "-o", bin, "./cmd/tollgate")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

func buildBinary(t *testing.T) string {
	t.Helper()
	bin, err := builtBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// sharedRedisURL is a Redis database this test empties first, so counters of earlier runs
// (the window is 5 minutes) cannot leak in. In CI a missing Redis fails the test.
func sharedRedisURL(t *testing.T) string {
	url := "redis://127.0.0.1:6379/15"
	opts, _ := redis.ParseURL(url)
	client := redis.NewClient(opts)
	defer client.Close()
	if err := client.FlushDB(context.Background()).Err(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Redis unreachable in CI: %v", err)
		}
		t.Skipf("Redis unreachable: %v", err)
	}
	return url
}

type process struct {
	cmd    *exec.Cmd
	addr   string
	stderr *logcapture.Buffer
	done   chan error
}

func startProcess(t *testing.T, bin string, env map[string]string) *process {
	t.Helper()
	return startProcessIn(t, "", bin, env)
}

// startProcessIn runs "tollgate serve" in dir ("" is the test's own).
func startProcessIn(t *testing.T, dir, bin string, env map[string]string) *process {
	t.Helper()
	p := &process{addr: env["ADDR"], stderr: &logcapture.Buffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(bin, "serve")
	p.cmd.Dir = dir
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	// The listener held for ADDR becomes the process's file descriptor 3 (LISTEN_FDS).
	listener := listenerFile(t, env["ADDR"])
	if listener != nil {
		p.cmd.ExtraFiles = []*os.File{listener}
		p.cmd.Env = append(p.cmd.Env, "LISTEN_FDS=1")
		defer listener.Close()
	}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
		}
	})
	return p
}

// waitHealthy waits for p to pass its healthcheck.
func waitHealthy(t *testing.T, bin string, p *process) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for healthcheckExit(t, bin, p.addr) != 0 {
		select {
		case err := <-p.done:
			p.done <- err // for the cleanup
			t.Fatalf("serve exited: %v\n%s", err, p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never became healthy:\n%s", p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func healthcheckExit(t *testing.T, bin, addr string) int {
	cmd := exec.Command(bin, "healthcheck")
	cmd.Env = []string{"ADDR=" + addr}
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// TestTwoInstancesBehaveAsOne: two serve processes on one Postgres and one Redis.
func TestTwoInstancesBehaveAsOne(t *testing.T) {
	t.Parallel() // its own processes, database and ports; it waits more than it works
	dbURL := dbtest.PostgresURL(t)
	redisURL := sharedRedisURL(t)
	bin := buildBinary(t)
	base := map[string]string{
		"APP_ENV": "production", "DATABASE_URL": dbURL, "REDIS_URL": redisURL, "LOG_FORMAT": "json",
		"WEB_WEBHOOK_SECRET": webSecret, "MOBILE_WEBHOOK_SECRET": mobileSecret,
		// Production's start-up checks: a public https address, and an identity service for
		// the API, whose throttles are counted here (no token ever reaches it).
		"PUBLIC_URL": "https://billing.example.test", "AUTH_URL": "http://127.0.0.1:9",
		"PLANS_FILE": "../../config/plans.yml",
	}
	var procs []*process
	for range 2 { // both at once, on an empty database
		env := map[string]string{"ADDR": holdAddr(t)}
		for k, v := range base {
			env[k] = v
		}
		procs = append(procs, startProcess(t, bin, env))
	}
	for _, p := range procs {
		waitHealthy(t, bin, p)
		if strings.Contains(p.stderr.String(), `"level":"ERROR"`) {
			t.Fatalf("errors while starting:\n%s", p.stderr.String())
		}
	}

	// The same event, delivered concurrently to both instances, is stored once.
	body, err := os.ReadFile("../billing/testdata/web/customer.subscription.updated.json")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	codes := make(chan int, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, "http://"+procs[i%2].addr+"/billing/webhooks/web", bytes.NewReader(body))
			req.Header.Set("Web-Signature", stripe.SignHeader(webSecret, time.Now(), body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Fatalf("delivery answered %d", c)
		}
	}
	check := dbtest.Open(t, dbURL)
	var rows int
	if err := check.QueryRow(`select count(*) from provider_events`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("%d provider_events rows (%v), want 1", rows, err)
	}

	// The per-IP limit is shared: 300 requests spread over both, then both refuse.
	get := func(p *process) int {
		resp, err := http.Get("http://" + p.addr + "/api/v1/me")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 300 {
		if code := get(procs[i%2]); code == http.StatusTooManyRequests {
			t.Fatalf("request %d throttled early", i+1)
		}
	}
	for _, p := range procs {
		if code := get(p); code != http.StatusTooManyRequests {
			t.Fatalf("request 301 to %s: %d, want 429", p.addr, code)
		}
	}

	// The healthcheck says no once an instance is gone.
	procs[0].cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-procs[0].done:
		if err != nil {
			t.Fatalf("graceful stop: %v\n%s", err, procs[0].stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("instance did not stop")
	}
	if code := healthcheckExit(t, bin, procs[0].addr); code == 0 {
		t.Fatal("healthcheck passed against a stopped server")
	}
	if code := healthcheckExit(t, bin, procs[1].addr); code != 0 {
		t.Fatalf("healthcheck against the running server: exit %d", code)
	}
}

func TestSyncEngineStartUpErrors(t *testing.T) {
	bin := buildBinary(t)
	for _, tc := range []struct{ name, dbURL, want string }{
		{"SQLite", "sqlite:" + filepath.Join(t.TempDir(), "x.db"), "needs a Postgres DATABASE_URL"},
		{"no mirror schema", dbtest.PostgresURL(t), `the mirror schema "stripe" (SYNC_ENGINE_SCHEMA) lacks`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, "serve")
			cmd.Env = []string{"APP_ENV=production", "PUBLIC_URL=https://billing.example.test", "FORMS=off", "API=off",
				"WEB_INGESTION=sync_engine", "MOBILE_WEBHOOK_SECRET=m", "DATABASE_URL=" + tc.dbURL, "ADDR=127.0.0.1:0"}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if err == nil || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %v, stderr %q, want a message containing %q", err, stderr.String(), tc.want)
			}
		})
	}
}
