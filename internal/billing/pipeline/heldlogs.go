package pipeline

import (
	"context"
	"log/slog"
	"sync"
)

// A batch may be applied more than once: again after a deadlock, and again with a
// savepoint per event after its first, optimistic attempt found an event to roll back
// alone. What an attempt logs is held until it is known to count, so that each event's
// lines are logged once, by the attempt that committed (or by the last one).

type heldKey struct{}

// heldLogs are the log records of one attempt, each with the context it was logged in.
type heldLogs struct {
	mu      sync.Mutex
	records []heldRecord
}

type heldRecord struct {
	ctx     context.Context
	handler slog.Handler
	record  slog.Record
}

// holdingLogs is ctx with the records logged in it held in h.
func holdingLogs(ctx context.Context, h *heldLogs) context.Context {
	return context.WithValue(ctx, heldKey{}, h)
}

// emit logs the held records, in order, and forgets them.
func (h *heldLogs) emit() {
	h.mu.Lock()
	records := h.records
	h.records = nil
	h.mu.Unlock()
	for _, r := range records {
		_ = r.handler.Handle(r.ctx, r.record) // a log line that fails has no one to tell
	}
}

// holdingHandler is a log handler that holds a record logged in a context holding logs,
// and passes any other straight on.
type holdingHandler struct{ inner slog.Handler }

func (h holdingHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h holdingHandler) Handle(ctx context.Context, r slog.Record) error {
	held, _ := ctx.Value(heldKey{}).(*heldLogs)
	if held == nil {
		return h.inner.Handle(ctx, r)
	}
	held.mu.Lock()
	defer held.mu.Unlock()
	held.records = append(held.records, heldRecord{ctx: ctx, handler: h.inner, record: r.Clone()})
	return nil
}

func (h holdingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return holdingHandler{h.inner.WithAttrs(attrs)}
}

func (h holdingHandler) WithGroup(name string) slog.Handler {
	return holdingHandler{h.inner.WithGroup(name)}
}
