package app

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// tollgate reconcile, by hand: a dry run reports the subscription whose webhooks never came
// and repairs nothing; the pass repairs it; a second finds nothing; status shows the passes
// with the drift, before → after.
func TestReconcileCommands(t *testing.T) {
	now := time.Now()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/subscriptions" || r.URL.Query().Get("status") != "all" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"object":"list","has_more":false,"data":[{"id":"sub_never_heard","object":"subscription","customer":"cus_never_heard",
			"status":"active","created":%d,"metadata":{"user_id":"%s"},
			"items":{"object":"list","data":[{"price":{"id":"price_1TESTmonthlyPro000001"},"current_period_end":%d}]}}]}`,
			now.Unix(), userUUID(61), now.AddDate(0, 1, 0).Unix())
	}))
	defer api.Close()
	env := testEnv(t, map[string]string{"WEB_API_KEY": "sk_test_reconcile", "WEB_API_BASE": api.URL})
	if code, _, errOut := runCmd(context.Background(), env, "plans", "sync"); code != 0 {
		t.Fatalf("plans sync: %s", errOut)
	}
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"reconcile", "--dry-run"}, "reconcile web: 1 checked, 1 drifted (would repair 1), 0 unresolved\n"},
		{[]string{"reconcile"}, "reconcile web: 1 checked, 1 drifted (repaired 1), 0 unresolved\n"},
		{[]string{"reconcile"}, "reconcile web: 1 checked, 0 drifted (repaired 0), 0 unresolved\n"},
	} {
		code, out, errOut := runCmd(context.Background(), env, step.args...)
		if code != 0 || out != step.want {
			t.Fatalf("%v: exit %d\n%s%s\nwant %s", step.args, code, out, errOut, step.want)
		}
	}
	code, out, _ := runCmd(context.Background(), env, "reconcile", "status")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 5 || !strings.Contains(lines[0], "1 checked, 0 drifted, 0 repaired") ||
		!strings.Contains(lines[1], "1 checked, 1 drifted, 1 repaired") || !strings.HasPrefix(lines[2], "  sub_never_heard: none → pro active until ") ||
		!strings.Contains(lines[3], "(dry run)") {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
}
