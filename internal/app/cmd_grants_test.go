package app

import (
	"context"
	"strings"
	"testing"
)

// TestGrantsCommands: grants add prints the grant, list shows one line per grant, revoke
// prints it ended; entitlements check follows; what cannot be granted says why and exits
// non-zero; both steps are in the audit log as cli:<OS user>.
func TestGrantsCommands(t *testing.T) {
	t.Parallel()
	env := testEnv(t, map[string]string{"USER": "bob"})
	ctx := context.Background()
	migrateAndSyncPlans(t, env)
	const user = "00000000-0000-4000-8000-00000000d001"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--plan", "platinum", "--for", "30d", "--reason", "x"}, "no such plan"},
		{[]string{"--plan", "pro", "--until", "2020-01-01T00:00:00Z", "--reason", "x"}, "the end must be in the future"},
		{[]string{"--plan", "pro", "--for", "30d", "--reason", " "}, "a reason is required"},
		{[]string{"--plan", "pro", "--reason", "x"}, "--until TIME or --for DURATION"},
		{[]string{"--plan", "pro", "--for", "soon", "--reason", "x"}, "--for:"},
		{[]string{"--plan", "pro", "--for", "30d"}, "--reason"},
	} {
		code, out, errOut := runCmd(ctx, env, append([]string{"grants", "add", "--user", user}, c.args...)...)
		if code == 0 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: %d %q %q, want %q", c.args, code, out, errOut, c.want)
		}
	}
	if code, _, _ := runCmd(ctx, env, "entitlements", "check", user, "exports"); code != 1 {
		t.Fatalf("entitled before any grant: exit %d", code)
	}

	code, out, errOut := runCmd(ctx, env, "grants", "add", "--user", user, "--plan", "pro", "--for", "30d", "--reason", "bug #12")
	if code != 0 {
		t.Fatalf("grants add: %d %s", code, errOut)
	}
	fields := strings.Split(strings.TrimSpace(out), "  ")
	if len(fields) != 5 || fields[1] != user || fields[2] != "pro" || fields[4] != "bug #12" {
		t.Fatalf("grants add printed %q", out)
	}
	id := fields[0]
	if code, _, errOut := runCmd(ctx, env, "entitlements", "check", user, "exports"); code != 0 {
		t.Fatalf("not entitled under the grant: %d %s", code, errOut)
	}
	if code, out, _ := runCmd(ctx, env, "grants", "list", "--user", user); code != 0 || strings.TrimSpace(out) != strings.Join(fields, "  ") {
		t.Fatalf("grants list: %d %q", code, out)
	}

	if code, _, errOut := runCmd(ctx, env, "grants", "revoke", id); code == 0 || !strings.Contains(errOut, "--reason") {
		t.Fatalf("revoke without a reason: %d %q", code, errOut)
	}
	code, out, errOut = runCmd(ctx, env, "grants", "revoke", id, "--reason", "fixed")
	if code != 0 || !strings.HasPrefix(out, id+"  "+user+"  pro  ") || !strings.HasSuffix(strings.TrimSpace(out), "[revoked by cli:bob: fixed]") {
		t.Fatalf("grants revoke: %d %q %s", code, out, errOut)
	}
	if code, _, _ := runCmd(ctx, env, "entitlements", "check", user, "exports"); code != 1 {
		t.Fatalf("entitled after the revocation: exit %d", code)
	}
	if code, _, errOut := runCmd(ctx, env, "grants", "revoke", id, "--reason", "again"); code == 0 || !strings.Contains(errOut, "already ended") {
		t.Fatalf("revoking twice: %d %q", code, errOut)
	}

	code, out, _ = runCmd(ctx, env, "audit", "list", "--user", user)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.Contains(lines[0], "cli:bob  revoke  grant "+id) || !strings.Contains(lines[1], "cli:bob  grant  grant "+id) {
		t.Fatalf("audit list: %d\n%s", code, out)
	}
}
