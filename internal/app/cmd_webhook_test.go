package app

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

// "webhook send" says what became of the event; with --now the README's worked example
// ends with an entitled user whatever the date.
func TestWebhookSendSaysWhatHappened(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t, nil)
	if code, _, errOut := runCmd(ctx, env, "plans", "sync"); code != 0 {
		t.Fatalf("plans sync: %s", errOut)
	}
	startServe(t, env)
	const (
		webFile    = "../billing/testdata/web/customer.subscription.updated.json"
		mobileFile = "../billing/testdata/mobile/subscription_started.json"
		user       = "5a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d"
	)
	send := func(args ...string) (int, string, string) {
		return runCmd(ctx, env, append([]string{"webhook", "send"}, args...)...)
	}
	steps := []struct {
		args []string
		want string // a regexp over stdout
	}{
		{[]string{"--provider", "web", "--file", webFile, "--now"}, `outcome: applied\nuser ` + user + `: plan pro, active until \S+\n$`},
		{[]string{"--provider", "web", "--file", webFile}, `outcome: older than the stored state`},
		{[]string{"--provider", "mobile", "--file", mobileFile, "--now"}, `outcome: applied\nuser ` + user + `: plan pro, active`},
		{[]string{"--provider", "mobile", "--file", mobileFile}, `outcome: older than the stored state`}, // October's own event
	}
	for _, step := range steps {
		code, out, errOut := send(step.args...)
		if code != 0 || !regexp.MustCompile(step.want).MatchString(out) {
			t.Fatalf("webhook send %v: exit %d\n%s%s\nwant %s", step.args, code, out, errOut, step.want)
		}
	}
	if code, out, _ := runCmd(ctx, env, "entitlements", "check", user, "exports"); code != 0 {
		t.Fatalf("after --now the user is not entitled: %s", out)
	}

	code, _, errOut := send("--provider", "mobile", "--file", webFile)
	if code == 0 || !strings.Contains(errOut, "holds a web event (Stripe-shaped), not a mobile one: send it with --provider web") {
		t.Fatalf("a web file sent as mobile: exit %d %q", code, errOut)
	}
	code, _, errOut = send("--provider", "web", "--file", mobileFile)
	if code == 0 || !strings.Contains(errOut, "--provider mobile") {
		t.Fatalf("a mobile file sent as web: exit %d %q", code, errOut)
	}
}
