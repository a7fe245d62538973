package app

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestCommandsBesideABusySQLiteServer: replay, plans sync and migrate, run while a serve
// process ingests from 16 senders on the same SQLite file, all succeed: write transactions
// take the lock up front and wait for it within the busy timeout.
func TestCommandsBesideABusySQLiteServer(t *testing.T) {
	env := testEnv(t, nil)
	bin := buildBinary(t)
	p := startProcess(t, bin, env)
	waitFor(t, func() bool { return healthcheckExit(t, bin, p.addr) == 0 })

	ctx, stopSending := context.WithCancel(context.Background())
	var sent, refused atomic.Int64
	wait := load(ctx, t, 16, env["PUBLIC_URL"], "busy", func(_ string, _ []byte, status int, err error) bool {
		switch {
		case err != nil:
		case status == http.StatusOK:
			sent.Add(1)
		default:
			refused.Add(1)
		}
		return true
	})
	waitFor(t, func() bool { return sent.Load() >= 50 }) // the server is busy

	// Each replay takes the events received in its own second, which the server keeps
	// adding beside it: the writes meet, and a replay stays short however fast the server is.
	replay := []string{"events", "replay", "--since", ""}
	commands := [][]string{replay, {"plans", "sync"}, replay, {"migrate"}, replay}
	for _, args := range commands {
		if args[0] == "events" {
			args[3] = time.Now().UTC().Format(time.RFC3339)
		}
		code, out, errOut := runCmd(context.Background(), env, args...)
		if code != 0 {
			t.Errorf("%s beside a busy server: exit %d: %s %s", strings.Join(args, " "), code, errOut, lastLine(out))
		}
	}
	stopSending()
	wait()
	if refused.Load() != 0 {
		t.Errorf("%d deliveries refused while the commands ran", refused.Load())
	}
	t.Logf("%d events ingested while %d commands ran", sent.Load(), len(commands))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
