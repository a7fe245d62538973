package app

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/logcapture"
	"github.com/tollgate/tollgate/internal/stores"
)

const (
	webSecret    = "whsec_app_test"
	mobileSecret = "mobile_app_test"
)

// testEnv is a complete environment for Run: a fresh SQLite file, the sample plans, a
// loopback port held open for the server (holdAddr).
func testEnv(t *testing.T, extra map[string]string) map[string]string {
	t.Helper()
	addr := holdAddr(t)
	m := map[string]string{
		"APP_ENV":               "test",
		"ADDR":                  addr,
		"PUBLIC_URL":            "http://" + addr,
		"DATABASE_URL":          "sqlite:" + filepath.Join(t.TempDir(), "app.db"),
		"WEB_WEBHOOK_SECRET":    webSecret,
		"MOBILE_WEBHOOK_SECRET": mobileSecret,
		"PLANS_FILE":            "../../config/plans.yml",
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// billingOnlyProduction is a production environment that passes the start-up checks
// without an identity service: the forms and the API are off.
func billingOnlyProduction(extra map[string]string) map[string]string {
	m := map[string]string{"APP_ENV": "production", "PUBLIC_URL": "https://billing.example.test", "FORMS": "off", "API": "off"}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// migrateAndSyncPlans is a release's first two steps on env's database: migrate, then plans
// sync (the only commands besides serve that a fresh database accepts is migrate).
func migrateAndSyncPlans(t *testing.T, env map[string]string) {
	t.Helper()
	for _, args := range [][]string{{"migrate"}, {"plans", "sync"}} {
		if code, _, errOut := runCmd(context.Background(), env, args...); code != 0 {
			t.Fatalf("%s: %s", strings.Join(args, " "), errOut)
		}
	}
}

func runCmd(ctx context.Context, envVars map[string]string, args ...string) (int, string, string) {
	return runCmdWith(ctx, stores.All(), envVars, args...)
}

// mapNames lists the variables of a test's environment, as Run lists the process's.
func mapNames(vars map[string]string) func() []string {
	return func() []string { return slices.Collect(maps.Keys(vars)) }
}

// runCmdWith is runCmd for a binary that knows the stores of list.
func runCmdWith(ctx context.Context, list stores.List, envVars map[string]string, args ...string) (int, string, string) {
	var stdout, stderr logcapture.Buffer
	e := env{stores: list, getenv: func(k string) string { return envVars[k] }, environ: mapNames(envVars), stdout: &stdout, stderr: &stderr}
	code := exitCode(run(ctx, args, e), &stderr)
	return code, stdout.String(), stderr.String()
}

func TestCommandsConfigurationErrors(t *testing.T) {
	code, _, errOut := runCmd(context.Background(), map[string]string{"APP_ENV": "production", "WEB_WEBHOOK_SECRET": "super-secret-value"}, "serve")
	if code == 0 || !strings.Contains(errOut, "MOBILE_WEBHOOK_SECRET") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("serve without a secret: exit %d, stderr %q (want one line naming the variable)", code, errOut)
	}
	if strings.Contains(errOut, "super-secret-value") {
		t.Error("a secret was printed")
	}
	env := testEnv(t, map[string]string{"WEB_INGESTION": "sync_engine"})
	if code, _, errOut := runCmd(context.Background(), env, "migrate"); code == 0 || !strings.Contains(errOut, "sync_engine needs a Postgres") {
		t.Errorf("sync_engine on SQLite: exit %d, %q", code, errOut)
	}
}

func TestMigrateAndPlansSyncCommands(t *testing.T) {
	env := testEnv(t, nil)
	// Neither needs the webhook secrets: a release step should not hold them.
	delete(env, "WEB_WEBHOOK_SECRET")
	delete(env, "MOBILE_WEBHOOK_SECRET")
	ctx := context.Background()
	if code, _, errOut := runCmd(ctx, env, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, errOut)
	}
	code, out, errOut := runCmd(ctx, env, "plans", "sync")
	if code != 0 || !strings.Contains(out, "plan pro: created") {
		t.Fatalf("plans sync: %d %q %s", code, out, errOut)
	}
	code, out, _ = runCmd(ctx, env, "plans", "sync")
	if code != 0 || strings.TrimSpace(out) != "plans are up to date" {
		t.Fatalf("second plans sync: %d %q", code, out)
	}
	bad := filepath.Join(t.TempDir(), "plans.yml")
	os.WriteFile(bad, []byte("plans:\n  a: {web_prices: [p]}\n  b: {web_prices: [p]}\n"), 0o600)
	env["PLANS_FILE"] = bad
	if code, _, errOut := runCmd(ctx, env, "plans", "sync"); code == 0 || !strings.Contains(errOut, `listed under both plan "a" and plan "b"`) {
		t.Fatalf("duplicate price: %d %q", code, errOut)
	}
	if code, _, errOut := runCmd(ctx, env, "events", "replay", "--since", "yesterday"); code == 0 || !strings.Contains(errOut, "--since") {
		t.Fatalf("bad --since: %d %q", code, errOut)
	}
}

// startServe runs "tollgate serve" in the background, on the listener held for its ADDR
// (holdAddr), and waits until it answers.
func startServe(t *testing.T, env map[string]string) (stop func() (int, string)) {
	t.Helper()
	stop, _ = startServeLogs(t, env)
	return stop
}

// startServeLogs is startServe that can also read the server's log while it runs.
func startServeLogs(t *testing.T, vars map[string]string) (stop func() (int, string), logs func() string) {
	t.Helper()
	return startServeWith(t, vars, stores.All())
}

// startServeWith is startServeLogs for a binary that knows the stores of list.
func startServeWith(t *testing.T, vars map[string]string, list stores.List) (stop func() (int, string), logs func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr logcapture.Buffer
	done := make(chan int, 1)
	ln := takeListener(vars["ADDR"])
	go func() {
		e := env{stores: list, getenv: func(k string) string { return vars[k] }, environ: mapNames(vars), stdout: io.Discard, stderr: &stderr, listener: ln}
		done <- exitCode(run(ctx, []string{"serve"}, e), &stderr)
		if ln != nil {
			ln.Close() // a serve that failed to start leaves it open
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	poll := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := poll.Get("http://" + vars["ADDR"] + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var once sync.Once
	var code int
	stop = func() (int, string) {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("serve did not stop")
			}
		})
		return code, stderr.String()
	}
	t.Cleanup(func() { stop() })
	return stop, stderr.String
}

func TestServeEndToEnd(t *testing.T) {
	env := testEnv(t, nil)
	ctx := context.Background()
	migrateAndSyncPlans(t, env)
	stop := startServe(t, env)
	base := env["PUBLIC_URL"]

	routes := []struct {
		path, contentType, body string
		status                  int
	}{
		{"/healthz", "application/json", `{"status":"ok"}`, 200},
		{"/readyz", "application/json", `{"status":"ready"}`, 200},
		{"/up", "text/html; charset=utf-8", "<html>", 200},
		{"/nowhere", "text/html; charset=utf-8", "There is nothing at this address", 404},
	}
	for _, r := range routes {
		resp, err := http.Get(base + r.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != r.status || (r.contentType != "" && resp.Header.Get("Content-Type") != r.contentType) || !strings.Contains(string(body), r.body) {
			t.Errorf("GET %s: %d %s %q", r.path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("GET %s: no X-Request-Id", r.path)
		}
	}

	// The web event goes out signed exactly as Stripe signs it (Stripe-Signature); the
	// metrics below show it applied.
	for _, send := range [][]string{
		{"--provider", "web", "--header", "stripe", "--file", "../billing/testdata/web/customer.subscription.updated.json"},
		{"--provider", "mobile", "--file", "../billing/testdata/mobile/subscription_started.json"},
	} {
		code, out, errOut := runCmd(ctx, env, append([]string{"webhook", "send"}, send...)...)
		if code != 0 || !strings.Contains(out, `{"received":true}`) {
			t.Fatalf("webhook send %v: %d %q %s", send, code, out, errOut)
		}
	}
	if code, _, errOut := runCmd(ctx, env, "webhook", "send", "--provider", "web", "--header", "x-sig", "--file", "../billing/testdata/web/customer.subscription.updated.json"); code == 0 || !strings.Contains(errOut, "--header") {
		t.Fatalf("webhook send --header x-sig: %d %q", code, errOut)
	}
	wrong := map[string]string{}
	for k, v := range env {
		wrong[k] = v
	}
	wrong["MOBILE_WEBHOOK_SECRET"] = "not-the-server-secret"
	if code, out, _ := runCmd(ctx, wrong, "webhook", "send", "--provider", "mobile", "--file", "../billing/testdata/mobile/subscription_started.json"); code == 0 || !strings.Contains(out, "401") {
		t.Fatalf("webhook send with the wrong secret: %d %q", code, out)
	}

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`tollgate_webhook_events_total{outcome="applied",provider="web"} 1`,
		`tollgate_webhook_events_total{outcome="unauthorized",provider="mobile"} 1`,
		`tollgate_http_requests_total{route="GET /healthz",status="200"}`,
		`go_sql_max_open_connections{db_name="tollgate"}`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	code, out, _ := runCmd(ctx, env, "events", "replay")
	if code != 0 || !strings.Contains(out, "replayed 2 event(s)") || !strings.Contains(out, ": duplicate") {
		t.Fatalf("events replay: %d %q", code, out)
	}

	code, logs := stop()
	if code != 0 {
		t.Fatalf("serve exited %d: %s", code, logs)
	}
	if strings.Contains(logs, webSecret) || strings.Contains(logs, mobileSecret) || strings.Contains(logs, "user42@example.test") {
		t.Fatal("a secret or a raw body reached the log")
	}
}

func TestPanicBecomesA500WithoutDetail(t *testing.T) {
	var logs logcapture.Buffer
	s := &Server{env: env{log: slog.New(slog.NewTextHandler(&logs, nil))}}
	h := s.withRecover(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("secret detail 42") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != 500 || rec.Header().Get("Content-Type") != "application/problem+json" || strings.Contains(rec.Body.String(), "secret detail") {
		t.Fatalf("panic answered %d %q", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), "secret detail 42") {
		t.Fatal("the panic was not logged")
	}
}

func TestWebRouteAbsentInSyncEngineModeThroughTheServer(t *testing.T) {
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"WEB_INGESTION": "sync_engine", "MOBILE_WEBHOOK_SECRET": mobileSecret}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(context.Background(), env{stores: stores.All(), cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil))}, dbtest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for i := range 50 { // always 404, never a form page or the forms' throttle
		resp, err := http.Post(srv.URL+"/billing/webhooks/web", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("web webhook %d in sync_engine mode: %d %s, want a 404 problem", i, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/billing/webhooks/mobile", strings.NewReader(`{}`))
	req.Header.Set("Authorization", mobileSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("mobile webhook in sync_engine mode: %d", resp.StatusCode)
	}
}

// A webhook still inside its transaction when SIGTERM arrives is finished and committed.
func TestGracefulShutdownFinishesInFlightWebhooks(t *testing.T) {
	dbURL := dbtest.PostgresURL(t)
	env := testEnv(t, map[string]string{"DATABASE_URL": dbURL})
	stop := startServe(t, env)

	// Hold a lock that the webhook's insert must wait for.
	locker, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	tx, err := locker.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("lock table provider_events in exclusive mode"); err != nil {
		t.Fatal(err)
	}

	type result struct {
		code int
		out  string
	}
	delivered := make(chan result, 1)
	go func() {
		code, out, _ := runCmd(context.Background(), env, "webhook", "send", "--provider", "mobile", "--file", "../billing/testdata/mobile/subscription_started.json")
		delivered <- result{code, out}
	}()
	waitFor(t, func() bool {
		var waiting int
		locker.QueryRow("select count(*) from pg_locks where relation = $1::regclass and not granted", strings.Split(strings.Split(dbURL, "search_path=")[1], "&")[0]+".provider_events").Scan(&waiting)
		return waiting > 0
	})

	stopped := make(chan struct{})
	var code int
	var logs string
	go func() { code, logs = stop(); close(stopped) }()
	time.Sleep(300 * time.Millisecond)
	select {
	case <-stopped:
		t.Fatal("the server stopped with a webhook in flight")
	default:
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-delivered
	if r.code != 0 || !strings.Contains(r.out, `{"received":true}`) {
		t.Fatalf("in-flight webhook: %d %q", r.code, r.out)
	}
	<-stopped
	if code != 0 {
		t.Fatalf("serve exited %d: %s", code, logs)
	}
	var n int
	if err := locker.QueryRow("select count(*) from provider_events").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d events stored (%v), want 1", n, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAPIDocsAndReadinessByEnvironment(t *testing.T) {
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer jwks.Close()
	build := func(vars map[string]string) http.Handler {
		vars["MOBILE_WEBHOOK_SECRET"], vars["WEB_WEBHOOK_SECRET"] = mobileSecret, webSecret
		cfg, err := config.Load(func(k string) string { return vars[k] })
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewServer(context.Background(), env{stores: stores.All(), cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil))}, dbtest.SQLite(t))
		if err != nil {
			t.Fatal(err)
		}
		return s.Handler()
	}
	get := func(h http.Handler, path string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code
	}
	production := build(map[string]string{"APP_ENV": "production", "AUTH_URL": jwks.URL})
	if code := get(production, "/api-docs"); code != http.StatusNotFound {
		t.Errorf("production /api-docs without SWAGGER_UI_ENABLED: %d, want 404", code)
	}
	if code := get(production, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("readyz before the key set loaded: %d, want 503", code)
	}
	if code := get(build(map[string]string{"APP_ENV": "production", "SWAGGER_UI_ENABLED": "true"}), "/api-docs"); code != http.StatusOK {
		t.Errorf("production /api-docs with SWAGGER_UI_ENABLED: %d", code)
	}
	if code := get(build(map[string]string{}), "/api-docs"); code != http.StatusOK {
		t.Errorf("development /api-docs: %d", code)
	}
}

// The image must be built exactly as CI builds: Docker is not available here, so this keeps
// the Dockerfile honest instead.
// TestDockerfileBuildsLikeCI reads the Dockerfile as a build would: its build step is
// scripts/build.sh, CI's build command; the binary that step names is the one the final
// stage copies, and running the step really leaves a working binary there. The final
// stage runs that binary as nonroot, with the healthcheck through it.
func TestDockerfileBuildsLikeCI(t *testing.T) {
	t.Parallel() // a build of its own, beside the tests that mostly wait
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	step := regexp.MustCompile(`(?m)^RUN sh scripts/build\.sh (\S+)$`).FindStringSubmatch(string(dockerfile))
	if step == nil {
		t.Fatal("the Dockerfile does not build with scripts/build.sh")
	}
	built := step[1]
	stages := strings.Split(string(dockerfile), "\nFROM ")
	if len(stages) < 2 {
		t.Fatal("the Dockerfile is not multi-stage")
	}
	final := stages[len(stages)-1]
	copied := regexp.MustCompile(`(?m)^COPY --from=build (\S+) (\S+)$`).FindStringSubmatch(final)
	if copied == nil || copied[1] != built {
		t.Fatalf("the final stage copies %v, not the %s the build step makes", copied, built)
	}
	for _, want := range []string{"USER nonroot", `HEALTHCHECK`, `["` + copied[2] + `", "healthcheck"]`, `ENTRYPOINT ["` + copied[2] + `"]`} {
		if !strings.Contains(final, want) {
			t.Errorf("the final stage lacks %q", want)
		}
	}
	if !regexp.MustCompile(`(?m)^sh scripts/build\.sh \S+$`).Match(ci) {
		t.Error(".ci/run does not build with scripts/build.sh")
	}

	// Run the step as the build stage would, into a directory like its /out.
	out := filepath.Join(t.TempDir(), filepath.Base(built))
	cmd := exec.Command("sh", "scripts/build.sh", out)
	cmd.Dir = "../.."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/build.sh: %v\n%s", err, b)
	}
	if b, err := exec.Command(out, "--help").CombinedOutput(); err != nil || !strings.Contains(string(b), "serve") {
		t.Fatalf("the built binary does not run: %v\n%s", err, b)
	}
	// The release binary names the commit it was built from.
	head, err := exec.Command("git", "-C", "../..", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("no git checkout to compare the revision with: %v", err)
	}
	if b, err := exec.Command(out, "version").Output(); err != nil || !strings.Contains(string(b), "revision "+strings.TrimSpace(string(head))) {
		t.Errorf("version of the built binary: %q (%v), want revision %s", b, err, head)
	}
}

// TestMetricsListener: with METRICS_ADDR, /metrics is served there only; without it, on the
// main port outside production and nowhere in production.
func TestMetricsListener(t *testing.T) {
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, tc := range []struct {
		name          string
		env           map[string]string
		main, private bool // where /metrics answers
	}{
		{"development default", map[string]string{"APP_ENV": "development"}, true, false},
		{"production default", billingOnlyProduction(nil), false, false},
		// Port 0: the server logs the port it was given.
		{"production with METRICS_ADDR", billingOnlyProduction(map[string]string{"METRICS_ADDR": "127.0.0.1:0"}), false, true},
		{"development with METRICS_ADDR", map[string]string{"APP_ENV": "development", "METRICS_ADDR": "127.0.0.1:0"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnv(t, tc.env)
			stop, logs := startServeLogs(t, env)
			status, body := get("http://" + env["ADDR"] + "/metrics")
			if onMain := status == http.StatusOK && strings.Contains(body, "go_goroutines"); onMain != tc.main {
				t.Errorf("/metrics on the main port: %d", status)
			}
			if tc.env["METRICS_ADDR"] != "" {
				bound := regexp.MustCompile(`metrics listening.*?addr"?[=:]"?([0-9.]+:[0-9]+)`).FindStringSubmatch(logs())
				if bound == nil {
					t.Fatalf("no metrics listening line:\n%s", logs())
				}
				status, body = get("http://" + bound[1] + "/metrics")
				if onPrivate := status == http.StatusOK && strings.Contains(body, "tollgate_http_requests_total"); onPrivate != tc.private {
					t.Errorf("/metrics on METRICS_ADDR: %d", status)
				}
			}
			if code, logs := stop(); code != 0 {
				t.Fatalf("serve exited %d: %s", code, logs)
			}
		})
	}
}
