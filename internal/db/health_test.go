package db

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/logcapture"
)

// At an outage's edges requests fail on broken connections while others succeed on fresh
// ones; that flapping is one outage, reported once when it starts and once when it settles.
func TestOutageReportedOnceDespiteFlapping(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, "sqlite::memory:", 0)
	if err != nil {
		t.Fatal(err)
	}
	var logs logcapture.Buffer // the settle timer writes while the test reads
	d.WatchRequests(time.Second, slog.New(slog.NewTextHandler(&logs, nil)), nil)
	down := errors.New("connection refused")

	for range 3 {
		d.Refused(ctx, down)
		d.Answered()
	}
	d.Refused(ctx, down)
	time.Sleep(outageSettle / 2)
	d.Answered()
	if strings.Contains(logs.String(), "available again") {
		t.Fatalf("the outage was reported over before it settled:\n%s", logs.String())
	}
	deadline := time.Now().Add(3 * outageSettle)
	for !strings.Contains(logs.String(), "available again") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	got := logs.String()
	if n := strings.Count(got, "database unavailable"); n != 1 {
		t.Errorf("outage start logged %d times, want once:\n%s", n, got)
	}
	if n := strings.Count(got, "available again"); n != 1 || !strings.Contains(got, "refused_requests=4") {
		t.Errorf("outage end logged %d times, want once with refused_requests=4:\n%s", n, got)
	}

	// A later outage is reported again, and its end is not lost when the process closes
	// the database before the settle period is over.
	d.Refused(ctx, down)
	d.Answered()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := logs.String(); strings.Count(got, "database unavailable") != 2 || strings.Count(got, "available again") != 2 {
		t.Errorf("a second outage was not reported start and end:\n%s", got)
	}
}
