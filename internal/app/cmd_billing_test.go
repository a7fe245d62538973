package app

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/stripe/stripemock"
	"github.com/tollgate/tollgate/internal/logcapture"
)

func TestBillingBackfillAgainstStripeMock(t *testing.T) {
	env := testEnv(t, map[string]string{"WEB_API_KEY": "sk_test_123", "WEB_API_BASE": stripemock.Start(t)})
	ctx := context.Background()
	migrateAndSyncPlans(t, env)
	// stripe-mock's one fixture subscription names a customer and price nobody maps.
	code, out, errOut := runCmd(ctx, env, "billing", "backfill", "web", "--dry-run", "--since", "2026-01-31", "--customer", "cus_123")
	if code != 0 || !strings.Contains(out, "  unresolved: unresolved web customer customer_id=cus_") ||
		!strings.Contains(out, "backfill web: 1 subscription(s) in 1 page(s): dry run, nothing written: would be 0 created, 0 updated, 0 unchanged, 1 unresolved") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCmd(ctx, env, "billing", "backfill", "web")
	if code != 0 || !strings.Contains(out, "0 created, 0 updated, 0 unchanged, 1 unresolved\nunresolved (link the customer") {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}

	env["WEB_API_KEY"] = "sk_test_"
	code, _, errOut = runCmd(ctx, env, "billing", "backfill", "web")
	if code != 1 || !strings.Contains(errOut, "web provider API refused WEB_API_KEY (401)") {
		t.Fatalf("bad key: exit %d %s", code, errOut)
	}
}

func TestBillingBackfillCommandLine(t *testing.T) {
	env := testEnv(t, map[string]string{"WEB_API_KEY": "sk_test_123", "WEB_API_BASE": "http://127.0.0.1:1"})
	ctx := context.Background()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mobile"}, `only web or paddle can be backfilled, got "mobile"`},
		{[]string{"web", "--since", "yesterday"}, "--since: want an RFC 3339 time"},
	} {
		code, _, errOut := runCmd(ctx, env, append([]string{"billing", "backfill"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "Usage: tollgate billing backfill") {
			t.Errorf("%v: exit %d %q, want %q", tc.args, code, errOut, tc.want)
		}
	}
	delete(env, "WEB_API_KEY")
	if code, _, errOut := runCmd(ctx, env, "billing", "backfill", "web"); code != 1 || !strings.HasPrefix(errOut, "tollgate: WEB_API_KEY: is required") {
		t.Errorf("no key: exit %d %q", code, errOut)
	}
}

// Ctrl-C while a page is being fetched: the process stops cleanly after the page it
// finished, says where, and the same command resumes there.
func TestBillingBackfillStopsOnSIGINTAndResumes(t *testing.T) {
	bin := buildBinary(t)
	secondPage := make(chan struct{}, 1)
	var hold atomic.Bool
	hold.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		after := r.URL.Query().Get("starting_after")
		if after == "sub_sigint_03" && hold.Load() {
			secondPage <- struct{}{}
			select { // until the interrupted client hangs up
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
			return
		}
		first := map[string]int{"": 1, "sub_sigint_03": 4}[after]
		var subs []string
		for n := first; n < first+3; n++ {
			subs = append(subs, fmt.Sprintf(`{"id":"sub_sigint_%02d","object":"subscription","customer":"cus_sigint_%02d","status":"active",
				"created":%d,"metadata":{"user_id":"00000000-0000-4000-8000-0000000000%02d"},
				"items":{"object":"list","data":[{"price":{"id":"price_1TESTmonthlyPro000001"},"current_period_end":4102444800}]}}`,
				n, n, 1790000000-n, n))
		}
		fmt.Fprintf(w, `{"object":"list","data":[%s],"has_more":%v}`, strings.Join(subs, ","), first == 1)
	}))
	defer srv.Close()
	env := testEnv(t, map[string]string{"WEB_API_KEY": "sk_test_sigint", "WEB_API_BASE": srv.URL})
	migrateAndSyncPlans(t, env)
	backfill := func() (*exec.Cmd, *logcapture.Buffer, *logcapture.Buffer) {
		cmd := exec.Command(bin, "billing", "backfill", "web")
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var stdout, stderr logcapture.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &stdout, &stderr
	}

	cmd, stdout, stderr := backfill()
	select {
	case <-secondPage:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the second page was never asked for: %s", stderr)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("interrupted run: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout.String(), "backfill web: 3 subscription(s) in 1 page(s): 3 created") ||
		!strings.Contains(stderr.String(), "tollgate: interrupted after sub_sigint_03; run the same command again to resume there") {
		t.Fatalf("interrupted run said\n%s%s", stdout, stderr)
	}

	hold.Store(false)
	cmd, stdout, stderr = backfill()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("resumed run: %v\n%s", err, stderr)
	}
	want := "resumed after sub_sigint_03 (3 subscription(s) done before)\nbackfill web: 3 subscription(s) in 1 page(s): 3 created, 0 updated, 0 unchanged, 0 unresolved\n"
	if stdout.String() != want {
		t.Fatalf("resumed run printed\n%s\nwant\n%s", stdout, want)
	}
}
