package db

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// health is how request handlers use the database: each unit of work gets a deadline
// (DB_TIMEOUT), and an outage is reported once, not once per refused request (a 5-second
// outage under load used to write thousands of ERROR lines).
type health struct {
	timeout     time.Duration
	log         *slog.Logger
	unavailable prometheus.Counter

	down    atomic.Bool
	refused atomic.Int64
	since   atomic.Int64 // unix nanoseconds the outage began
}

// WatchRequests sets the deadline of each request's database work and where outages are
// reported. Without it there is no deadline and nothing is reported.
func (d *DB) WatchRequests(timeout time.Duration, log *slog.Logger, reg prometheus.Registerer) {
	h := &health{timeout: timeout, log: log, unavailable: prometheus.NewCounter(prometheus.CounterOpts{
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

// Refused records a request refused because its database work failed: a count, and a
// warning only when it is the first of an outage. (The surface that refuses the request
// writes its own debug line, with the request id.)
func (d *DB) Refused(ctx context.Context, err error) {
	h := d.health
	if h == nil {
		return
	}
	h.unavailable.Inc()
	h.refused.Add(1)
	if h.down.CompareAndSwap(false, true) {
		h.since.Store(time.Now().UnixNano())
		h.log.WarnContext(ctx, "database unavailable: refusing requests with 503 until it answers", "engine", string(d.Engine), "error", err)
	}
}

// Answered records database work that succeeded; the first success after an outage reports
// its end and how many requests it refused.
func (d *DB) Answered(ctx context.Context) {
	h := d.health
	if h == nil {
		return
	}
	if !h.down.Load() || !h.down.CompareAndSwap(true, false) {
		return
	}
	outage := time.Since(time.Unix(0, h.since.Load())).Round(time.Millisecond)
	h.log.WarnContext(ctx, "database available again", "engine", string(d.Engine), "refused_requests", h.refused.Swap(0), "outage", outage)
}

// Report is Refused for a non-nil err and Answered for nil, returning err.
func (d *DB) Report(ctx context.Context, err error) error {
	if err != nil {
		d.Refused(ctx, err)
	} else {
		d.Answered(ctx)
	}
	return err
}
