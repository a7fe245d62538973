package app

import (
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/logcapture"
)

func TestProgressBarMeasuresTheTimeCovered(t *testing.T) {
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	newest := since.Add(100 * time.Hour)
	for _, tc := range []struct {
		reached time.Time
		want    string
	}{
		{newest, "[----------]   0%"},
		{newest.Add(-25 * time.Hour), "[##--------]  25%"},
		{since, "[##########] 100%"},
		{since.Add(-time.Hour), "[##########] 100%"}, // the last page reaches past since
		{newest.Add(time.Hour), "[----------]   0%"}, // created after the run began
	} {
		if got := progressBar(since, newest, tc.reached, 10); got != tc.want {
			t.Errorf("reached %v: %q, want %q", tc.reached, got, tc.want)
		}
	}
}

func TestProgressLineOnATerminalAndInALog(t *testing.T) {
	start := time.Now()
	since := start.Add(-100 * time.Hour)
	sum := pipeline.BackfillSummary{Pages: 2, Seen: 200, Reached: start.Add(-50 * time.Hour)}

	var tty logcapture.Buffer
	p := newProgressLine(&tty, "backfill web", since)
	p.tty, p.started = true, start // halfway from the run's start back to since, whenever the line is made
	p.update(sum)
	p.waiting(2*time.Second, "web provider API: rate limited (429)")
	p.done()
	lines := strings.Split(tty.String(), "\r\033[K")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "backfill web [############------------]  50% 200 subscription(s), 2 page(s), back to ") ||
		!strings.HasSuffix(lines[2], " · waiting 2s: web provider API: rate limited (429)\n") {
		t.Fatalf("terminal output %q", tty.String())
	}

	var log logcapture.Buffer
	p = newProgressLine(&log, "backfill web", time.Time{})
	p.update(sum) // too soon after the start for a line
	p.lastPlain = time.Now().Add(-plainEvery)
	p.update(sum)
	p.waiting(time.Second, "web provider API: 502")
	p.done()
	want := "backfill web: 200 subscription(s), 2 page(s), back to " + sum.Reached.Format(time.DateOnly) + "\nbackfill web: waiting 1s: web provider API: 502\n"
	if log.String() != want {
		t.Fatalf("log output %q\nwant %q", log.String(), want)
	}
}
