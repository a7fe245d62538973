package config

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// MinRetention is the shortest EVENT_RETENTION accepted: Apple's notification history
// reaches 180 days back, and a redelivery from it must still find its event. (Billing keeps
// the same bound as billing.MinRetention; a test holds them equal.)
const MinRetention = 180 * 24 * time.Hour

// Retention is how long stored events are kept (EVENT_RETENTION_*, ARCHIVE_DIR).
type Retention struct {
	// Window (EVENT_RETENTION) is how long a stored event is kept after it was received;
	// zero (unset, or 0) keeps every event. Under MinRetention is refused: the App Store's
	// notification history reaches that far back, and a redelivery from it must still
	// find its event.
	Window time.Duration
	// Unresolved (EVENT_RETENTION_UNRESOLVED) is how long an unresolved or unprocessed
	// event is kept: twice the window unless set, and never less than it.
	Unresolved time.Duration
	// ArchiveDir (ARCHIVE_DIR), when set, is where serve writes each day's events, as
	// gzipped NDJSON, before removing them.
	ArchiveDir string
}

func loadRetention(get func(name, def string) string, fail func(name, format string, args ...any)) Retention {
	var r Retention
	days := func(name string) time.Duration {
		raw := get(name, "")
		if raw == "" || raw == "0" {
			return 0
		}
		d, err := parseDays(raw)
		if err != nil || d < MinRetention {
			fail(name, "want a duration of 180d or more such as 400d, or 0 to keep every event; Apple's notification history reaches 180 days back, got %q", raw)
			return 0
		}
		return d
	}
	r.Window = days("EVENT_RETENTION")
	r.Unresolved = days("EVENT_RETENTION_UNRESOLVED")
	switch {
	case r.Window == 0 && r.Unresolved != 0:
		fail("EVENT_RETENTION_UNRESOLVED", "is set without EVENT_RETENTION, which turns retention on")
	case r.Unresolved == 0:
		r.Unresolved = 2 * r.Window
	case r.Unresolved < r.Window:
		fail("EVENT_RETENTION_UNRESOLVED", "want at least EVENT_RETENTION: unresolved events are kept longer, not shorter")
	}
	if r.ArchiveDir = get("ARCHIVE_DIR", ""); r.ArchiveDir != "" {
		if info, err := os.Stat(r.ArchiveDir); err != nil || !info.IsDir() {
			fail("ARCHIVE_DIR", "want an existing directory to write the archived events to, got %q", r.ArchiveDir)
		}
	}
	return r
}

// parseDays reads whole days ("400d") or a Go duration ("9600h").
func parseDays(raw string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(raw, "d"); ok {
		days, err := strconv.ParseInt(n, 10, 32)
		if err != nil || days < 0 || days > 100*365 {
			return 0, strconv.ErrSyntax
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(raw)
}
