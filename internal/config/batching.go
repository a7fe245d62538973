package config

import (
	"strconv"
	"time"
)

// Batching is how webhooks' events share transactions (group commit).
type Batching struct {
	// Size (INGEST_BATCH_SIZE) is the most events one transaction holds.
	Size int
	// Wait (INGEST_BATCH_WAIT) is how long a batch's first event waits for more.
	Wait time.Duration
}

// The limits of the batching settings: every event of a guarded batch has a savepoint, and
// Postgres keeps only 64 of a transaction's in memory; a wait past 50 ms would hold every
// webhook back for longer than it saves.
const (
	maxBatchSize = 64
	maxBatchWait = 50 * time.Millisecond
)

func loadBatching(get func(name, def string) string, fail func(name, format string, args ...any)) Batching {
	b := Batching{Size: 32, Wait: time.Millisecond}
	if raw := get("INGEST_BATCH_SIZE", ""); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxBatchSize {
			fail("INGEST_BATCH_SIZE", "want events per transaction from 1 to %d, got %q", maxBatchSize, raw)
		} else {
			b.Size = n
		}
	}
	if raw := get("INGEST_BATCH_WAIT", ""); raw != "" {
		d, err := time.ParseDuration(raw)
		if raw == "0" {
			d, err = 0, nil
		}
		if err != nil || d < 0 || d > maxBatchWait {
			fail("INGEST_BATCH_WAIT", "want a duration from 0 to %s such as 1ms, got %q", maxBatchWait, raw)
		} else {
			b.Wait = d
		}
	}
	return b
}
