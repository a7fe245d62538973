package billing_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// unixCodec reads the test documents' times: seconds since the epoch, as numbers.
func unixCodec(_ string, value any) (time.Time, func(time.Time) any, bool) {
	n, ok := value.(float64)
	if !ok {
		return time.Time{}, nil, false
	}
	return time.Unix(int64(n), 0).UTC(), func(t time.Time) any { return float64(t.Unix()) }, true
}

// The files of one life, each moved to now, keep their period ends in order: a renewal's
// ends a period after the start's, a cancellation's where the renewal's does; what
// happened before an event stays before now.
func TestMoveTimesToNowKeepsALifeInOrder(t *testing.T) {
	day := func(d int) float64 { return float64(time.Date(2026, 10, d, 12, 0, 0, 0, time.UTC).Unix()) }
	now := time.Date(2027, 3, 5, 9, 0, 0, 0, time.UTC)
	life := []struct {
		name        string
		event       float64
		doc         map[string]any
		wantEndDays int // the period's end, in days after now
	}{
		{"start", day(1), map[string]any{"start": day(1), "period": map[string]any{"from": day(1), "to": day(31)}}, 30},
		{"renewal", day(31), map[string]any{"start": day(1), "period": map[string]any{"from": day(31), "to": day(31) + 30*86400}}, 60},
		{"cancel", day(31) + 10*86400, map[string]any{"start": day(1), "period": map[string]any{"from": day(31), "to": day(31) + 30*86400}}, 60},
	}
	for _, step := range life {
		step.doc["created"] = day(1) - 400*86400 // an older time, such as a price's: not the start
		doc := step.doc
		billing.MoveTimesToNow(doc, unixCodec, "start", time.Unix(int64(step.event), 0), now)
		b, _ := json.Marshal(doc)
		period := doc["period"].(map[string]any)
		end := time.Unix(int64(period["to"].(float64)), 0).UTC()
		if want := now.AddDate(0, 0, step.wantEndDays); !end.Equal(want) {
			t.Errorf("%s: the period ends %v, want %v (%s)", step.name, end, want, b)
		}
		if start := time.Unix(int64(doc["start"].(float64)), 0); start.After(now) {
			t.Errorf("%s: the subscription starts %v, after now", step.name, start)
		}
		if from := time.Unix(int64(period["from"].(float64)), 0); from.After(now) {
			t.Errorf("%s: the period starts %v, after now: what happened before the event must stay before now", step.name, from)
		}
	}
}
