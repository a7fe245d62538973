package billing

import "time"

// TimeCodec finds the times a store writes in its events: for the value at key, whether it
// is a time, which, and how to write another time in the same form.
type TimeCodec func(key string, value any) (t time.Time, write func(time.Time) any, ok bool)

// MoveTimesToNow moves every time codec finds in doc (JSON decoded into maps and slices) by
// the one rule "webhook send --now" follows for every store: the event, which happened at
// event, happens at now; a time up to the event keeps its distance before it; a time after
// the event (a period's end, a cancellation scheduled for it) keeps its distance from the
// subscription's start (the time at startKey, where doc has one; else the event). So the
// files of one life, each sent now, keep their periods in order: a renewal's end comes a
// period after the start's, and a cancellation at the period's end keeps the renewal's.
func MoveTimesToNow(doc any, codec TimeCodec, startKey string, event, now time.Time) {
	start := event
	walkTimes(doc, func(key string, value any) (time.Time, func(time.Time) any, bool) {
		if key != startKey {
			return time.Time{}, nil, false
		}
		return codec(key, value)
	}, func(t time.Time) (time.Time, bool) {
		if t.Before(start) {
			start = t
		}
		return t, false
	})
	walkTimes(doc, codec, func(t time.Time) (time.Time, bool) {
		if !t.After(event) {
			return now.Add(t.Sub(event)), true
		}
		return now.Add(t.Sub(start)), true
	})
}

// walkTimes calls visit with every time codec finds in v, writing back what visit returns
// when it says to.
func walkTimes(v any, codec TimeCodec, visit func(time.Time) (time.Time, bool)) {
	switch v := v.(type) {
	case map[string]any:
		for key, child := range v {
			if t, write, ok := codec(key, child); ok {
				if moved, rewrite := visit(t); rewrite {
					v[key] = write(moved)
				}
				continue
			}
			walkTimes(child, codec, visit)
		}
	case []any:
		for _, child := range v {
			walkTimes(child, codec, visit)
		}
	}
}
