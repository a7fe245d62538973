// Package pipeline is billing's one ingestion path, for every provider adapter: record
// the event, read it through its adapter, apply it in order under its subscription's row
// lock, resolve the customer and the plan, write the canonical row, detect whether the
// user's answer changed and record that in the outbox, and mark the event processed — in
// the transaction that stores it. Replays and backfills take the same path.
package pipeline

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/db"
)

// Options configures a Pipeline.
type Options struct {
	// Adapters are the providers whose events are processed, replayed or backfilled.
	Adapters []billing.Adapter
	// Catalogues is the plan catalogue shared with the reader.
	Catalogues *plans.Catalogues
	// Mirror, in sync_engine mode, is where web subscriptions are read from; else nil.
	Mirror plans.Mirror
	// OutboundWebhooks records an entitlements.changed event in the outbox with every
	// change of a user's billing answer (OUTBOUND_WEBHOOK_URL is set).
	OutboundWebhooks bool
	// Batching groups webhooks' events into transactions.
	Batching Batching
	// Registerer takes tollgate_ingest_batch_size; nil registers nothing.
	Registerer prometheus.Registerer
	Clock      func() time.Time
}

// Pipeline applies providers' events to the canonical model.
type Pipeline struct {
	db         *db.DB
	log        *slog.Logger
	now        func() time.Time
	adapters   map[string]billing.Adapter
	catalogues *plans.Catalogues
	mirror     plans.Mirror
	announce   bool // record changes in the outbox
	onChange   []func(ctx context.Context, userID string)
	onCommit   []func(users ...string)
	queue      *queue
	batchSize  prometheus.Histogram
	// guardedUntil is until when (Unix ns) batches set a savepoint per event (guardFor).
	guardedUntil atomic.Int64
}

// New builds a Pipeline.
func New(d *db.DB, log *slog.Logger, opts Options) *Pipeline {
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	p := &Pipeline{
		db: d, log: slog.New(holdingHandler{log.Handler()}), now: func() time.Time { return clock().UTC() }, adapters: map[string]billing.Adapter{},
		catalogues: opts.Catalogues, mirror: opts.Mirror, announce: opts.OutboundWebhooks,
	}
	batching := opts.Batching
	if batching.Writers < 1 {
		batching.Writers = map[db.Engine]int{db.Postgres: 2, db.SQLite: 1}[d.Engine]
	}
	p.queue = newQueue(batching, p.commit)
	p.batchSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "tollgate_ingest_batch_size",
		Help:    "Webhook events committed per transaction (group commit).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 7),
	})
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(p.batchSize)
	}
	if p.catalogues == nil {
		p.catalogues = &plans.Catalogues{}
	}
	for _, a := range opts.Adapters {
		p.adapters[a.Provider()] = a
	}
	return p
}

// Adapter is the adapter of provider, if the pipeline has one.
func (p *Pipeline) Adapter(provider string) (billing.Adapter, bool) {
	a, ok := p.adapters[provider]
	return a, ok
}

// Providers are the providers the pipeline has adapters for, sorted.
func (p *Pipeline) Providers() []string {
	names := make([]string, 0, len(p.adapters))
	for name := range p.adapters {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// OnBillingChange registers fn, called after a transaction that changed a user's billing
// answer (the view /api/v1/me gives) commits, with that user's id: by webhooks, replays
// and backfills, not by an event that changed no answer (see upsertSubscription). It runs
// before the webhook is answered, so it should be quick, or hand the work off. Register
// before serving.
func (p *Pipeline) OnBillingChange(fn func(ctx context.Context, userID string)) {
	p.onChange = append(p.onChange, fn)
}

// OnCommit registers fn, called after every transaction that wrote users' billing rows,
// with those users (changed or not): the reader forgets what it kept of them.
func (p *Pipeline) OnCommit(fn func(users ...string)) { p.onCommit = append(p.onCommit, fn) }

// committed runs the hooks after a transaction that wrote rows of the touched users and
// changed the answers of changed.
func (p *Pipeline) committed(ctx context.Context, touched []string, changed []string) {
	for _, fn := range p.onCommit {
		fn(append(slices.Clone(changed), touched...)...)
	}
	p.billingChanged(ctx, changed)
}

// billingChanged calls the hooks for each changed user once. A hook that panics is logged;
// the change is committed regardless.
func (p *Pipeline) billingChanged(ctx context.Context, users []string) {
	for i, userID := range users {
		if slices.Contains(users[:i], userID) {
			continue
		}
		for _, fn := range p.onChange {
			func() {
				defer func() {
					if v := recover(); v != nil {
						p.log.ErrorContext(ctx, "billing change hook panicked", "user_id", userID, "panic", v)
					}
				}()
				fn(ctx, userID)
			}()
		}
	}
}

// Processed is what became of an event: its outcome (applied, duplicate, stale, ignored,
// unresolved, invalid), the user it resolved to, and for unresolved and invalid events
// the reason stored with it.
type Processed struct {
	Outcome string
	UserID  string
	Reason  string
	changed []string
	columns eventColumns
}
