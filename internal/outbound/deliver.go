package outbound

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Timeout bounds one attempt: a receiver that has not answered by then has failed it.
const Timeout = 10 * time.Second

// Options configures a Deliverer. URL and Key are required.
type Options struct {
	URL string
	// Key is the secret's key: the bytes behind "whsec_", decoded.
	Key        []byte
	Log        *slog.Logger
	Registerer prometheus.Registerer
	// Poll is how often the outbox is looked at when nothing woke the deliverer: the
	// latest a delivery recorded by another instance, or one due for a retry, waits.
	// Default 1 s.
	Poll time.Duration
	// Lease is how long a claimed delivery is held by its instance; a delivery whose
	// instance died is attempted again once it runs out. It must exceed Timeout. Default 30 s.
	Lease time.Duration
	// Backoff is the wait after the nth failed attempt. Default: Backoff.
	Backoff func(attempt int) time.Duration
	Clock   func() time.Time
}

// batch is how many deliveries, each of a different user, are attempted at once.
const batch = 16

// Deliverer sends the outbox's pending deliveries.
type Deliverer struct {
	db      *db.DB
	opts    Options
	client  *http.Client
	wake    chan struct{}
	metrics metrics
}

type metrics struct {
	outcomes *prometheus.CounterVec
	latency  prometheus.Histogram
}

// New builds a Deliverer over a migrated database; Run starts it.
func New(d *db.DB, opts Options) *Deliverer {
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Lease <= 0 {
		opts.Lease = 30 * time.Second
	}
	if opts.Backoff == nil {
		opts.Backoff = Backoff
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	del := &Deliverer{
		db: d, opts: opts, wake: make(chan struct{}, 1),
		client: &http.Client{
			Timeout: Timeout,
			// A redirect is an answer, not a delivery: the receiver's URL is configured.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		metrics: metrics{
			outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "tollgate_outbound_deliveries_total",
				Help: "Outbound webhook attempts by outcome: delivered, retried (failed, tried again later) or failed (given up).",
			}, []string{"outcome"}),
			latency: prometheus.NewHistogram(prometheus.HistogramOpts{
				Name:    "tollgate_outbound_delivery_latency_seconds",
				Help:    "Time from an outbound event's recording to its delivery.",
				Buckets: []float64{.01, .05, .1, .25, .5, 1, 5, 30, 300, 3600, 86400},
			}),
		},
	}
	if opts.Registerer != nil {
		pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tollgate_outbound_deliveries_pending",
			Help: "Outbound webhook deliveries recorded and not yet delivered or given up.",
		}, del.countPending)
		opts.Registerer.MustRegister(del.metrics.outcomes, del.metrics.latency, pending)
	}
	return del
}

func (d *Deliverer) countPending() float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := dbq.New(d.db).CountPendingDeliveries(ctx)
	if err != nil {
		return -1
	}
	return float64(n)
}

// Wake asks for a look at the outbox now: a change was just committed.
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, then lets the attempts in flight finish. Up to batch
// attempts, each of a different user, run at once; a slow receiver holds up only the
// user whose event it holds.
func (d *Deliverer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	inFlight := make(chan struct{}, batch)
	for {
		var rows []dbq.ClaimDeliveriesRow
		var err error
		if free := cap(inFlight) - len(inFlight); free > 0 {
			rows, err = d.claim(ctx, free)
			if err != nil && ctx.Err() == nil {
				d.opts.Log.WarnContext(ctx, "outbound deliveries could not be claimed", "error", err)
			}
		}
		for _, r := range rows {
			inFlight <- struct{}{}
			wg.Go(func() {
				defer func() { <-inFlight; d.Wake() }() // the user's next event may be due
				d.attempt(context.WithoutCancel(ctx), r)
			})
		}
		if len(rows) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-time.After(d.opts.Poll):
		}
	}
}

// claim leases up to max due deliveries, at most one per user: the oldest pending of each.
func (d *Deliverer) claim(ctx context.Context, max int) ([]dbq.ClaimDeliveriesRow, error) {
	now := d.opts.Clock().UTC()
	arg := dbq.ClaimDeliveriesParams{LeaseUntil: sql.NullTime{Time: now.Add(d.opts.Lease), Valid: true}, Now: now, Max: int32(max)}
	q := dbq.New(d.db)
	if d.db.Engine != db.Postgres {
		return q.ClaimDeliveries(ctx, arg)
	}
	rows, err := q.ClaimDeliveriesSkipLocked(ctx, dbq.ClaimDeliveriesSkipLockedParams(arg))
	claimed := make([]dbq.ClaimDeliveriesRow, len(rows))
	for i, r := range rows {
		claimed[i] = dbq.ClaimDeliveriesRow(r)
	}
	return claimed, err
}

// attempt sends one delivery and records how it went. A failure to record it leaves the
// lease to run out, after which it is attempted again.
func (d *Deliverer) attempt(ctx context.Context, r dbq.ClaimDeliveriesRow) {
	err := d.post(ctx, r)
	now := d.opts.Clock().UTC()
	q := dbq.New(d.db)
	if err == nil {
		d.metrics.outcomes.WithLabelValues("delivered").Inc()
		d.metrics.latency.Observe(now.Sub(r.CreatedAt).Seconds())
		if err := q.MarkDelivered(ctx, dbq.MarkDeliveredParams{ID: r.ID, Now: sql.NullTime{Time: now, Valid: true}}); err != nil {
			d.opts.Log.WarnContext(ctx, "outbound delivery sent but not recorded; it will be sent again", "delivery_id", r.ID, "error", err)
		}
		return
	}
	next, status, outcome := now.Add(d.opts.Backoff(int(r.Attempts))), Pending, "retried"
	if next.After(r.GiveUpAt) {
		status, outcome = Failed, "failed"
		d.opts.Log.WarnContext(ctx, "outbound delivery failed for good", "delivery_id", r.ID, "message_id", r.MessageID, "attempts", r.Attempts, "error", err)
	} else {
		d.opts.Log.InfoContext(ctx, "outbound delivery attempt failed", "delivery_id", r.ID, "attempt", r.Attempts, "retry_at", next, "error", err)
	}
	d.metrics.outcomes.WithLabelValues(outcome).Inc()
	if err := q.MarkAttemptFailed(ctx, dbq.MarkAttemptFailedParams{
		ID: r.ID, Status: status, NextAttemptAt: next, LastError: sql.NullString{String: err.Error(), Valid: true},
	}); err != nil {
		d.opts.Log.WarnContext(ctx, "outbound delivery attempt not recorded", "delivery_id", r.ID, "error", err)
	}
}

// post makes one attempt. Its error says what happened in words safe to store and log:
// the status, or the kind of network failure, never the URL (it may carry a token) nor the
// receiver's answer.
func (d *Deliverer) post(ctx context.Context, r dbq.ClaimDeliveriesRow) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.opts.URL, bytes.NewReader([]byte(r.Payload)))
	if err != nil {
		return errors.New("the request could not be built")
	}
	at := time.Now() // receivers hold it against their wall clock, whatever Clock says
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "tollgate-webhooks")
	req.Header.Set("webhook-id", r.MessageID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
	req.Header.Set("webhook-signature", Sign(d.opts.Key, r.MessageID, at, []byte(r.Payload)))
	resp, err := d.client.Do(req)
	if err != nil {
		return describeNetworkError(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("answered %d", resp.StatusCode)
	}
	return nil
}

func describeNetworkError(err error) error {
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("no answer within %s", Timeout)
	case errors.As(err, &opErr):
		return fmt.Errorf("%s failed: %v", opErr.Op, opErr.Err)
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return fmt.Errorf("request failed: %v", urlErr.Err)
	}
	return errors.New("request failed")
}

// Backoff waits about 5 s after the first failed attempt, doubling to at most an hour,
// each wait spread by ±25% so that retries after an outage do not arrive together.
func Backoff(attempt int) time.Duration {
	wait := min(5*time.Second<<min(max(attempt-1, 0), 10), time.Hour)
	return wait*3/4 + rand.N(wait/2)
}
