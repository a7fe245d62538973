package pipeline

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Batching is how webhooks' events are grouped into transactions (group commit): each
// event waits in a queue, and a writer takes up to Size of them into one transaction as
// soon as Size are waiting or the first of them has waited Wait, whichever comes first.
// Every event is answered once the transaction that holds it has committed.
type Batching struct {
	// Size is the most events one transaction holds; below 1, DefaultBatchSize.
	Size int
	// Wait is how long the first event of a batch waits for more; 0 takes whatever is
	// waiting when a writer is free.
	Wait time.Duration
	// Writers is how many batches may be in their transactions at once: while one
	// commits, the next fills. Below 1, two on Postgres and one on SQLite, whose single
	// connection runs one transaction at a time anyway.
	Writers int
}

// Batch sizes: the default (serve's, chosen by measurement, docs/performance.md) and the
// most.
const (
	DefaultBatchSize = 32
	// MaxBatchSize: every event of a guarded batch has a savepoint, and Postgres keeps the first
	// 64 subtransactions of a transaction in shared memory; past that, every other
	// session's snapshot looks them up on disk.
	MaxBatchSize = 64
)

// job is one event waiting for its batch, and then what became of it.
type job struct {
	ctx    context.Context // the request's, for its values (a request id in logs)
	ev     event
	key    string // the lock order: the provider and the subscription it names
	queued time.Time
	done   chan struct{} // closed once its transaction committed or failed
	result Processed
	err    error
}

// queue hands waiting jobs to writers in batches. Writers are goroutines started when
// events wait and none is gathering, and end when nothing is left to take, so an idle
// pipeline runs none.
type queue struct {
	opts Batching
	run  func(batch []*job) // applies a batch and closes each job's done

	mu        sync.Mutex
	waiting   []*job
	writers   int           // running, gathering or in a transaction
	gathering bool          // a writer is waiting for its batch to fill
	full      chan struct{} // wakes the gathering writer: Size jobs are waiting
}

func newQueue(opts Batching, run func([]*job)) *queue {
	if opts.Size < 1 {
		opts.Size = DefaultBatchSize
	}
	opts.Size = min(opts.Size, MaxBatchSize)
	opts.Writers = max(opts.Writers, 1)
	return &queue{opts: opts, run: run, full: make(chan struct{}, 1)}
}

// add queues j for a batch.
func (q *queue) add(j *job) {
	j.queued, j.done = time.Now(), make(chan struct{})
	q.mu.Lock()
	defer q.mu.Unlock()
	q.waiting = append(q.waiting, j)
	switch {
	case !q.gathering && q.writers < q.opts.Writers:
		q.writers++
		q.gathering = true
		go q.write()
	case len(q.waiting) >= q.opts.Size:
		select {
		case q.full <- struct{}{}:
		default:
		}
	}
}

// withdraw takes j out of the queue if no batch has taken it yet, and says whether it did.
func (q *queue) withdraw(j *job) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.waiting, j)
	if i >= 0 {
		q.waiting = slices.Delete(q.waiting, i, i+1)
	}
	return i >= 0
}

// write is a writer: it gathers a batch, applies it, and gathers again while events wait.
func (q *queue) write() {
	q.mu.Lock()
	for {
		q.gather()
		if len(q.waiting) == 0 {
			q.writers--
			q.gathering = false
			q.mu.Unlock()
			return
		}
		n := min(len(q.waiting), q.opts.Size)
		batch := slices.Clone(q.waiting[:n])
		q.waiting = slices.Delete(q.waiting, 0, n)
		q.gathering = false
		if len(q.waiting) > 0 && q.writers < q.opts.Writers {
			q.writers++ // the rest need not wait for this batch's commit
			q.gathering = true
			go q.write()
		}
		q.mu.Unlock()
		q.run(batch)
		q.mu.Lock()
		if q.gathering { // another writer gathers already: this one is not needed
			q.writers--
			q.mu.Unlock()
			return
		}
		q.gathering = true
	}
}

// gather waits, with q.mu held on entry and exit, until Size jobs wait or the first of
// them has waited Wait.
func (q *queue) gather() {
	for len(q.waiting) > 0 && len(q.waiting) < q.opts.Size {
		wait := time.Until(q.waiting[0].queued.Add(q.opts.Wait))
		if wait <= 0 {
			return
		}
		q.mu.Unlock()
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-q.full:
		}
		timer.Stop()
		q.mu.Lock()
	}
}
