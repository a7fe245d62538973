package outbound

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// DefaultTimeout bounds one attempt unless Options.Timeout says otherwise: a receiver that
// has not answered by then has failed it.
const DefaultTimeout = 10 * time.Second

// A 2xx status delivers; the body after it only keeps the connection reusable. A receiver
// that trickles it must not hold a slot of the batch: at most answerBodyLimit bytes are
// read, for at most answerBodyWait after the status.
const (
	answerBodyLimit = 4 << 10
	answerBodyWait  = time.Second
)

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
	// Timeout bounds one attempt (OUTBOUND_WEBHOOK_TIMEOUT). Default DefaultTimeout.
	Timeout time.Duration
	// Lease is how long a claimed delivery is held by its instance; a delivery whose
	// instance died is attempted again once it runs out. It must exceed Timeout, so that
	// a slow attempt is never sent twice. Default three Timeouts.
	Lease time.Duration
	// Pace is the least time between two of the deliverer's transactions. Default 100 ms.
	Pace time.Duration
	// Backoff is the wait after the nth failed attempt. Default: Backoff.
	Backoff func(attempt int) time.Duration
	Clock   func() time.Time
	// DBTimeout bounds each of the deliverer's transactions, the last at shutdown too
	// (DB_TIMEOUT). Default 5 s.
	DBTimeout time.Duration
}

// batch is how many deliveries, each of a different user, are attempted at once. With
// Pace it bounds the rate, 1280 a second, above what ingestion commits on two cores (on
// SQLite, about a thousand changes a second): the deliverer keeps up with the busiest
// stream while its bookkeeping stays at ten transactions a second (docs/performance.md).
const batch = 128

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
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Lease <= 0 {
		opts.Lease = 3 * opts.Timeout
	}
	if opts.Pace <= 0 {
		opts.Pace = 100 * time.Millisecond
	}
	if opts.Backoff == nil {
		opts.Backoff = Backoff
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.DBTimeout <= 0 {
		opts.DBTimeout = 5 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	del := &Deliverer{
		db: d, opts: opts, wake: make(chan struct{}, 1),
		client: &http.Client{
			Timeout:   opts.Timeout,
			Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: batch, IdleConnTimeout: 90 * time.Second},
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

// countPending is the pending gauge, read at each scrape; -1 says the database could not
// be asked, which an alert on growth must not take for zero.
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

// Run delivers until ctx ends, then waits for the attempts in flight and records them. Up
// to batch attempts, each of a different user, run at once; a slow receiver holds up only
// the user whose event it holds. One transaction records the attempts finished since the
// last and claims the next, at most one per Pace: under load the deliverer costs the
// database a commit per Pace, not two per event, and ingestion keeps its speed.
func (d *Deliverer) Run(ctx context.Context) {
	results := make(chan settled, batch)
	var finished []settled
	inFlight := 0
	collect := func(s settled) { finished, inFlight = append(finished, s), inFlight-1 }
	var last time.Time
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(last.Add(d.opts.Pace))):
		}
		for drained := false; !drained; {
			select {
			case s := <-results:
				collect(s)
			default:
				drained = true
			}
		}
		last = time.Now()
		free := batch - inFlight
		if ctx.Err() != nil {
			free = 0
		}
		rows, err := d.settleAndClaim(ctx, finished, free)
		if err != nil {
			// The finished attempts are kept and recorded by the next transaction that
			// succeeds: while their leases hold nobody sends them again, and a delivery
			// goes out twice only if the database stays away longer than the lease.
			d.opts.Log.WarnContext(ctx, "outbound deliveries could not be recorded or claimed; trying again", "finished", len(finished), "error", err)
		} else {
			finished = finished[:0]
		}
		for _, r := range rows {
			inFlight++
			go func() { results <- d.attempt(context.WithoutCancel(ctx), r) }()
		}
		if len(rows) > 0 {
			continue // more may be due
		}
		select {
		case <-ctx.Done():
		case <-d.wake:
		case s := <-results:
			collect(s) // that user's next event may be due
		case <-time.After(d.opts.Poll):
		}
	}
	for inFlight > 0 {
		collect(<-results)
	}
	if _, err := d.settleAndClaim(ctx, finished, 0); err != nil {
		d.opts.Log.WarnContext(ctx, "outbound deliveries could not be recorded; they will be sent again", "error", err)
	}
}

// settled is how one attempt went.
type settled struct {
	id        int64
	delivered bool
	at        time.Time
	// When not delivered: the next attempt's time, or failed, and why.
	next   time.Time
	failed bool
	reason string
}

// settleAndClaim records finished attempts, moves recorded events in, and leases up to
// claim due deliveries, at most one per user (the oldest pending of each), in one
// transaction.
func (d *Deliverer) settleAndClaim(ctx context.Context, finished []settled, claim int) ([]dbq.ClaimDeliveriesRow, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.opts.DBTimeout)
	defer cancel()
	var claimed []dbq.ClaimDeliveriesRow
	err := d.db.InTx(ctx, func(tx *sql.Tx) error {
		q := dbq.New(tx)
		if err := d.markDelivered(ctx, q, finished); err != nil {
			return err
		}
		for _, s := range finished {
			if s.delivered {
				continue
			}
			status := Pending
			if s.failed {
				status = Failed
			}
			if err := q.MarkAttemptFailed(ctx, dbq.MarkAttemptFailedParams{ID: s.id, Status: status, NextAttemptAt: s.next, LastError: sql.NullString{String: s.reason, Valid: true}}); err != nil {
				return err
			}
		}
		if claim == 0 {
			return nil
		}
		now := d.opts.Clock().UTC()
		leaseUntil := now.Add(d.opts.Lease)
		var err error
		claimed, err = moveRecorded(ctx, d.db, q, claim, leaseUntil)
		if err != nil {
			return err
		}
		if claim -= len(claimed); claim == 0 {
			return nil
		}
		arg := dbq.ClaimDeliveriesParams{LeaseUntil: sql.NullTime{Time: leaseUntil, Valid: true}, Now: now, Max: int32(claim)}
		if d.db.Engine != db.Postgres {
			more, err := q.ClaimDeliveries(ctx, arg)
			claimed = append(claimed, more...)
			return err
		}
		rows, err := q.ClaimDeliveriesSkipLocked(ctx, dbq.ClaimDeliveriesSkipLockedParams(arg))
		for _, r := range rows {
			claimed = append(claimed, dbq.ClaimDeliveriesRow(r))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// markDelivered records the delivered attempts among finished: in one statement on
// Postgres, where each costs a round trip; one by one on SQLite, where none does.
func (d *Deliverer) markDelivered(ctx context.Context, q *dbq.Queries, finished []settled) error {
	type delivery struct {
		ID int64     `json:"id"`
		At time.Time `json:"at"`
	}
	var delivered []delivery
	for _, s := range finished {
		if s.delivered {
			delivered = append(delivered, delivery{s.id, s.at})
		}
	}
	if len(delivered) == 0 {
		return nil
	}
	if d.db.Engine == db.Postgres {
		all, err := json.Marshal(delivered)
		if err != nil {
			return err
		}
		return q.MarkAllDelivered(ctx, all)
	}
	for _, r := range delivered {
		if err := q.MarkDelivered(ctx, dbq.MarkDeliveredParams{ID: r.ID, Now: sql.NullTime{Time: r.At, Valid: true}}); err != nil {
			return err
		}
	}
	return nil
}

// attempt sends one delivery and says how it went.
func (d *Deliverer) attempt(ctx context.Context, r dbq.ClaimDeliveriesRow) settled {
	err := d.post(ctx, r)
	now := d.opts.Clock().UTC()
	if err == nil {
		d.metrics.outcomes.WithLabelValues("delivered").Inc()
		d.metrics.latency.Observe(now.Sub(r.CreatedAt).Seconds())
		return settled{id: r.ID, delivered: true, at: now}
	}
	s := settled{id: r.ID, at: now, next: now.Add(d.opts.Backoff(int(r.Attempts))), reason: err.Error()}
	outcome := "retried"
	if s.next.After(r.GiveUpAt) {
		s.failed, outcome = true, "failed"
		d.opts.Log.WarnContext(ctx, "outbound delivery failed for good", "delivery_id", r.ID, "message_id", r.MessageID, "attempts", r.Attempts, "error", err)
	} else {
		d.opts.Log.InfoContext(ctx, "outbound delivery attempt failed", "delivery_id", r.ID, "attempt", r.Attempts, "retry_at", s.next, "error", err)
	}
	d.metrics.outcomes.WithLabelValues(outcome).Inc()
	return s
}

// post makes one attempt. Its error says what happened in words safe to store and log:
// the status, or the kind of network failure, never the URL (it may carry a token) nor the
// receiver's answer.
func (d *Deliverer) post(ctx context.Context, r dbq.ClaimDeliveriesRow) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
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
		return describeNetworkError(err, d.opts.Timeout)
	}
	bodyRead := time.AfterFunc(answerBodyWait, cancel) // a trickling body ends here
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, answerBodyLimit))
	bodyRead.Stop()
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("answered %d", resp.StatusCode)
	}
	return nil
}

func describeNetworkError(err error, timeout time.Duration) error {
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("no answer within %s", timeout)
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
