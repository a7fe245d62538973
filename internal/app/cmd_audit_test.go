package app

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestEveryActionByHandIsAudited: each command that changes billing state leaves one
// record naming cli and the OS user, the replay of one event naming its user too; "audit
// list" shows them, newest first, and --user only that user's.
func TestEveryActionByHandIsAudited(t *testing.T) {
	t.Parallel()
	env, s := appStoreAPIEnv(t)
	env["USER"] = "alice"
	ctx := context.Background()
	notify(t, s, "audit-1", "SUBSCRIBED", time.Minute)
	for _, args := range [][]string{
		{"migrate"},
		{"plans", "sync"},
		{"keys", "create", "--name", "audit-backend"},
		{"keys", "revoke", "audit-backend"},
		{"reconcile", "--provider", "appstore", "--since", "1h"},
		{"reconcile", "--provider", "appstore", "--dry-run"}, // changes nothing: not recorded
		{"events", "replay", "--provider", "appstore", "--id", "audit-1"},
		{"deliveries", "retry", "--failed"},
	} {
		if code, out, errOut := runCmd(ctx, env, args...); code != 0 {
			t.Fatalf("%v: %d %s %s", args, code, out, errOut)
		}
	}
	code, out, errOut := runCmd(ctx, env, "audit", "list")
	if code != 0 {
		t.Fatalf("audit list: %d %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{
		"cli:alice  retry delivery  every failed delivery  user -: 0 queued",
		"cli:alice  replay  appstore audit-1  user " + historyUser + ": 1 replayed",
		"cli:alice  reconcile  appstore  user -: 1 checked, 0 drifted (repaired 0), 1 unresolved, 0 failed", // Apple has no status for it here
		"cli:alice  keys revoke  audit-backend  user -: revoked",
		"cli:alice  keys create  audit-backend  user -: created",
		"cli:alice  plans sync  ",
	}
	if len(lines) != len(want) {
		t.Fatalf("audit list:\n%s\nwant %d records", out, len(want))
	}
	for i, w := range want {
		if _, rest, _ := strings.Cut(lines[i], "  "); !strings.HasPrefix(rest, w) {
			t.Errorf("record %d: %q, want %q…", i, lines[i], w)
		}
	}
	code, out, _ = runCmd(ctx, env, "audit", "list", "--user", historyUser, "--since", "1h")
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, "replay  appstore audit-1") {
		t.Fatalf("audit list --user: %d %q", code, out)
	}
}
