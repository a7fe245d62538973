package pipeline

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestHeldLogsWaitForTheirAttempt: lines logged in a context holding logs appear only when
// emitted, in order and with their logger's attributes; other lines appear at once.
func TestHeldLogsWaitForTheirAttempt(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(holdingHandler{slog.NewTextHandler(&out, nil)}).With("batch", 7)
	held := &heldLogs{}
	ctx := holdingLogs(context.Background(), held)
	log.InfoContext(ctx, "first held")
	log.InfoContext(context.Background(), "not held")
	log.WarnContext(ctx, "second held")
	if got := out.String(); strings.Contains(got, "first held") || strings.Contains(got, "second held") || !strings.Contains(got, "not held") {
		t.Fatalf("before emit:\n%s", got)
	}
	held.emit()
	got := out.String()
	first, second := strings.Index(got, "first held"), strings.Index(got, "second held")
	if first < 0 || second < first || strings.Count(got, "batch=7") != 3 {
		t.Fatalf("after emit:\n%s", got)
	}
	held.emit() // emitted once only
	if strings.Count(out.String(), "first held") != 1 {
		t.Fatalf("emitted twice:\n%s", out.String())
	}
}
