package pipeline

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Ingest stores one verified event and processes it, so that it is either recorded and
// processed or, on any database failure, not there at all. Events from concurrent
// requests share transactions (Batching): Ingest returns once the transaction holding
// this event has committed. An adapter's network step runs before the event joins a batch
// and its post-commit action after; the failure of either is returned as a *RetryError.
func (p *Pipeline) Ingest(ctx context.Context, provider string, ev billing.Event, body []byte) (Processed, error) {
	a, ok := p.adapters[provider]
	if !ok {
		return Processed{}, fmt.Errorf("no adapter for provider %q", provider)
	}
	if f, ok := a.(billing.Fetcher); ok {
		var err error
		if ev, err = f.Fetch(ctx, ev, body, p.now()); err != nil {
			return Processed{}, &RetryError{Err: err}
		}
	}
	// Read here, in the request's goroutine, not in the batch's transaction, which runs
	// one event after another.
	r, err := a.Read(ev, body)
	j := &job{ctx: ctx, ev: event{adapter: a, Event: ev, body: body, read: &readResult{r, err}}, key: provider + "\x00" + r.Subscription}
	if err := p.db.Report(ctx, p.await(ctx, j)); err != nil {
		return Processed{}, err
	}
	done := j.result
	p.committed(ctx, []string{done.UserID}, done.changed)
	if c, ok := a.(billing.Committer); ok {
		if err := c.Committed(ctx, ev, done.Outcome); err != nil {
			// The event stays applied; a failure answers 503 so that the provider delivers it
			// again and the action is tried again (applying it again changes nothing).
			return done, &RetryError{Err: err}
		}
	}
	return done, nil
}

// RetryError is an adapter's network work failing, before the event's transaction (the
// purchase's read) or after its commit (its acknowledgement): the provider should retry.
type RetryError struct{ Err error }

func (e *RetryError) Error() string { return "the provider's API: " + e.Err.Error() }
func (e *RetryError) Unwrap() error { return e.Err }

// await queues j and waits for its transaction. A job that no batch has taken by the
// request's database deadline leaves the queue unapplied; once taken, its batch's own
// deadline bounds it.
func (p *Pipeline) await(ctx context.Context, j *job) error {
	ctx, cancel := p.db.Bound(ctx)
	defer cancel()
	p.queue.add(j)
	select {
	case <-j.done:
	case <-ctx.Done():
		if p.queue.withdraw(j) {
			return ctx.Err()
		}
		<-j.done
	}
	return j.err
}

// maxAttempts is how many times a batch that Postgres gave up for conflicting with
// another transaction (a deadlock with another instance's batch) is tried.
const maxAttempts = 3

// guardFor is how long batches stay guarded (a savepoint per event) after one had an
// event to roll back alone: a stream of events that resolve to no one then costs one batch
// applied twice in that time, not every batch.
const guardFor = time.Minute

// commit applies a batch in one transaction and tells each job how it went. Events are
// applied in the order of the rows they lock, so that two batches lock rows in one order
// and wait for each other rather than deadlock; a batch that deadlocks regardless (on a
// customer's row, say) is tried again whole. A batch is first applied without savepoints;
// one that holds an event to roll back alone (unresolved, invalid, failed) is applied
// again with a savepoint per event.
func (p *Pipeline) commit(batch []*job) {
	slices.SortStableFunc(batch, func(a, b *job) int { return strings.Compare(a.key, b.key) })
	ctx, cancel := p.db.Bound(context.Background())
	defer cancel()
	guarded := time.Now().UnixNano() < p.guardedUntil.Load()
	var err error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		held := &heldLogs{}
		attemptCtx := holdingLogs(ctx, held)
		err = p.db.InTx(attemptCtx, func(tx *sql.Tx) error { return p.applyBatch(attemptCtx, tx, batch, guarded) })
		if !errors.Is(err, errUnguarded) && (!db.IsConflict(err) || attempt == maxAttempts) {
			held.emit() // this attempt counts: the batch is not applied again
		}
		if errors.Is(err, errUnguarded) {
			guarded = true
			p.guardedUntil.Store(time.Now().Add(guardFor).UnixNano())
			p.log.DebugContext(ctx, "a batch held an event to roll back alone; applying it again with a savepoint per event", "events", len(batch))
			continue
		}
		if !db.IsConflict(err) {
			break
		}
		p.log.InfoContext(ctx, "a batch of webhook events conflicted with another transaction; applying it again",
			"attempt", attempt, "events", len(batch), "error", err)
	}
	applied := 0
	for _, j := range batch {
		if err != nil {
			j.err = err
		}
		if j.err == nil {
			applied++
		}
	}
	// Counted before anyone is told, so that whoever was answered finds its batch counted.
	if err == nil {
		p.batchSize.Observe(float64(applied))
	}
	for _, j := range batch {
		close(j.done)
	}
}

// applyBatch processes and stores each job's event; guarded, behind a savepoint of its
// own: an event whose work fails is rolled back alone and answered as a failure, while
// its neighbours commit. Unguarded, such an event returns errUnguarded.
func (p *Pipeline) applyBatch(ctx context.Context, tx *sql.Tx, batch []*job, guarded bool) error {
	q := dbq.New(tx)
	for i, j := range batch {
		j.result, j.err = Processed{}, nil
		ctx := withValuesOf(ctx, j.ctx)
		sp := savepoint{name: "event_" + strconv.Itoa(i), guarded: guarded}
		done, err := p.ingestOne(ctx, tx, q, sp, j.ev)
		switch {
		case err == nil:
			j.result = done
		case db.IsConflict(err):
			return err
		default:
			if rollbackErr := sp.rollBack(ctx, tx); rollbackErr != nil {
				if errors.Is(rollbackErr, errUnguarded) {
					return errUnguarded
				}
				return err // the transaction is lost: every event of the batch fails
			}
			j.err = err
		}
	}
	return nil
}

// ingestOne processes and stores one event of a batch. A panic (an adapter's bug) is this
// event's failure alone: it runs in the batch's writer, where nothing else would recover it.
func (p *Pipeline) ingestOne(ctx context.Context, tx *sql.Tx, q *dbq.Queries, sp savepoint, ev event) (done Processed, err error) {
	defer func() {
		if v := recover(); v != nil {
			p.log.ErrorContext(ctx, "panic processing a webhook event", "provider", ev.adapter.Provider(), "event_id", ev.ID,
				"panic", v, "stack", string(debug.Stack()))
			err = fmt.Errorf("processing panicked: %v", v)
		}
	}()
	if pruned, err := p.wasPruned(ctx, q, ev); err != nil || pruned {
		// Removed by retention, its key kept: the duplicate it is, stored nowhere again.
		return Processed{Outcome: billing.OutcomeDuplicate}, err
	}
	if done, err = p.process(ctx, tx, sp, ev); err != nil {
		return done, err
	}
	return done, p.storeEvent(ctx, q, ev.adapter.Provider(), ev, done)
}

// prunable is how old an event's own time must be before it can have been removed by
// retention: the shortest window, less a day for providers' clocks. Only such events (a
// provider's late redelivery) are looked up among the removed ones, so that ingestion of
// today's events pays nothing for retention.
const prunable = billing.MinRetention - 24*time.Hour

// wasPruned says whether ev is an event retention removed, by the key it left.
func (p *Pipeline) wasPruned(ctx context.Context, q *dbq.Queries, ev event) (bool, error) {
	r, err := ev.reading()
	if err != nil || r.Snapshot || r.At.IsZero() || r.At.After(p.now().Add(-prunable)) {
		return false, nil
	}
	n, err := q.WasPruned(ctx, dbq.WasPrunedParams{Provider: ev.adapter.Provider(), ProviderEventID: ev.ID})
	return n > 0, err
}

// valuesOf is a context with the deadline and cancellation of one (a batch's) and the
// values of another (the request that sent an event: its request id, for logs).
type valuesOf struct {
	context.Context
	values context.Context
}

func withValuesOf(ctx, values context.Context) context.Context { return valuesOf{ctx, values} }

func (c valuesOf) Value(key any) any {
	if _, ok := key.(heldKey); ok {
		return c.Context.Value(key) // the batch's attempt holds the event's log lines
	}
	return c.values.Value(key)
}
