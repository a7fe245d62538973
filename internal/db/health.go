package db

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// outageSettle is how long the database must go without refusing a request before an
// outage is reported over. Around an outage's edges some requests fail on connections
// broken while others succeed on fresh ones; without it one outage was logged as several.
const outageSettle = time.Second

// health is how request handlers use the database: each unit of work gets a deadline
// (DB_TIMEOUT), and an outage is reported once, not once per refused request (a 5-second
// outage under load used to write thousands of ERROR lines).
type health struct {
	timeout     time.Duration
	log         *slog.Logger
	engine      Engine
	unavailable prometheus.Counter

	down atomic.Bool // read lock-free on every success; changed under mu

	mu          sync.Mutex
	refused     int64
	since       time.Time // the outage's first refusal
	lastRefusal time.Time
	answered    bool // a request succeeded after lastRefusal
	checking    *time.Timer
}

// WatchRequests sets the deadline of each request's database work and where outages are
// reported. Without it there is no deadline and nothing is reported.
func (d *DB) WatchRequests(timeout time.Duration, log *slog.Logger, reg prometheus.Registerer) {
	h := &health{timeout: timeout, log: log, engine: d.Engine, unavailable: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tollgate_db_unavailable_total",
		Help: "Requests refused because the database failed or did not answer within DB_TIMEOUT.",
	})}
	if reg != nil {
		reg.MustRegister(h.unavailable)
	}
	d.health = h
}

// Bound gives ctx the deadline for one request's database work.
func (d *DB) Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if d.health == nil || d.health.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d.health.timeout)
}

// Request runs one request's database work within DB_TIMEOUT (Bound) and tells the
// outage log how it went. An error answered says is the domain's answer, not the
// database's failure (a refusal the domain decided: no entitlement, over the limit), so
// the database counts as answering; answered may be nil.
func (d *DB) Request(ctx context.Context, work func(ctx context.Context) error, answered func(error) bool) error {
	ctx, cancel := d.Bound(ctx)
	defer cancel()
	err := work(ctx)
	if err != nil && answered != nil && answered(err) {
		d.Answered()
		return err
	}
	return d.Report(ctx, err)
}

// Refused records a request refused because its database work failed: a count, and a
// warning only when it is the first of an outage. (The surface that refuses the request
// writes its own debug line, with the request id.)
func (d *DB) Refused(ctx context.Context, err error) {
	h := d.health
	if h == nil {
		return
	}
	h.unavailable.Inc()
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	h.refused++
	h.lastRefusal = now
	h.answered = false
	if !h.down.Load() {
		h.down.Store(true)
		h.since = now
		h.log.WarnContext(ctx, "database unavailable: refusing requests with 503 until it answers", "engine", string(h.engine), "error", err)
	}
}

// Answered records database work that succeeded. The outage is reported over, with how
// many requests it refused, once the database has answered and refused nothing for
// outageSettle.
func (d *DB) Answered() {
	h := d.health
	if h == nil || !h.down.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answered = true
	if h.checking == nil {
		h.checking = time.AfterFunc(outageSettle, h.settle)
	}
}

// settle ends the outage if nothing was refused since the last success, else waits again.
func (h *health) settle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checking = nil
	if !h.down.Load() {
		return
	}
	if !h.answered {
		return // refused since; the next success checks again
	}
	if wait := outageSettle - time.Since(h.lastRefusal); wait > 0 {
		h.checking = time.AfterFunc(wait, h.settle)
		return
	}
	h.end()
}

// end reports the outage over; h.mu is held.
func (h *health) end() {
	h.down.Store(false)
	h.log.Warn("database available again", "engine", string(h.engine), "refused_requests", h.refused,
		"outage", h.lastRefusal.Sub(h.since).Round(time.Millisecond))
	h.refused = 0
}

// Close reports an outage that ended before the settle period ran out, then closes the
// database.
func (d *DB) Close() error {
	if h := d.health; h != nil {
		h.mu.Lock()
		if h.checking != nil {
			h.checking.Stop()
			h.checking = nil
		}
		if h.down.Load() && h.answered {
			h.end()
		}
		h.mu.Unlock()
	}
	return d.DB.Close()
}

// Report is Refused for a non-nil err and Answered for nil, returning err.
func (d *DB) Report(ctx context.Context, err error) error {
	if err != nil {
		d.Refused(ctx, err)
	} else {
		d.Answered()
	}
	return err
}
