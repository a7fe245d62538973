package pipeline

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// event is an event to process: its adapter, what Parse named, and its body.
type event struct {
	billing.Event
	adapter billing.Adapter
	body    []byte
	// read is what its adapter's Read gave, when it was read before the transaction (a
	// webhook's event, read while it waits for its batch); nil: read it in process.
	read *readResult
}

// readResult is what an adapter's Read gave.
type readResult struct {
	billing.Reading
	err error
}

// reading gives what the event says, read once.
func (e event) reading() (billing.Reading, error) {
	if e.read == nil {
		return e.adapter.Read(e.Event, e.body)
	}
	return e.read.Reading, e.read.err
}

// savepoint names a savepoint of the transaction an event is processed in: each event of
// a guarded batch has its own, so that rolling one back never reaches into its neighbours.
// An optimistic batch (guarded false) sets none, saving a statement and a subtransaction
// an event: rolling an event of it back reports errUnguarded instead, and the batch is
// applied again, guarded (commit).
type savepoint struct {
	name    string
	guarded bool
}

// errUnguarded is an event of an optimistic batch that must be rolled back alone.
var errUnguarded = errors.New("an event of a batch without savepoints must be rolled back alone")

func (s savepoint) set(ctx context.Context, tx *sql.Tx) error {
	if !s.guarded {
		return nil
	}
	_, err := tx.ExecContext(ctx, "savepoint "+s.name)
	return err
}

func (s savepoint) rollBack(ctx context.Context, tx *sql.Tx) error {
	if !s.guarded {
		return errUnguarded
	}
	_, err := tx.ExecContext(ctx, "rollback to savepoint "+s.name)
	return err
}

// work is one event's work inside a transaction: the transaction's queries, the adapter,
// what caused it, the plan catalogue's version its row lock read, what it read ahead for
// the canonical write, and what it did. Several events may share one transaction, each
// with its own work.
type work struct {
	*dbq.Queries
	adapter      billing.Adapter
	cause        billing.ChangeCause
	plansVersion int64
	customerRead *customerRead // see upsertCustomer
	// stale: the stored state was newer than the reading (a backfill reports it).
	stale bool
	// changed are the users whose billing answer the work changed, told once it commits;
	// user is the user the event resolved to, if it did. named is the user its customer
	// resolved to even when its plan did not: an unresolved event is stored with it, so
	// that the console lists it on that user's timeline.
	changed []string
	user    string
	named   string
	// answerBefore is the reading's Reading.AnswerBefore.
	answerBefore time.Time
	// record is what the event did to its subscription, stored with the event.
	record record
}

func newWork(tx *sql.Tx, a billing.Adapter, cause billing.ChangeCause) *work {
	return &work{Queries: dbq.New(tx), adapter: a, cause: cause}
}

// process runs the adapter over an event; the caller stores the event with what became of
// it (outcome, user, reason, and its subscription's row before and after) in the same
// transaction. The event's writes sit behind the savepoint sp, set here: an event that
// resolves to no user or plan, or that can never be processed, leaves every canonical row
// exactly as it was, and its reason is stored on the event so that `events replay
// --unprocessed` finds it again. Any other error is returned: the caller rolls back to sp
// (a batch) or the whole transaction, and the provider retries.
func (p *Pipeline) process(ctx context.Context, tx *sql.Tx, sp savepoint, ev event) (Processed, error) {
	if err := sp.set(ctx, tx); err != nil {
		return Processed{}, err
	}
	provider := ev.adapter.Provider()
	w := newWork(tx, ev.adapter, billing.ChangeCause{Provider: provider, ProviderEventID: ev.ID, EventType: ev.Type})
	outcome, err := p.applyEvent(ctx, w, ev)
	var invalid *billing.Invalid
	var unresolved *billing.Unresolved
	processingError := sql.NullString{}
	switch {
	case errors.As(err, &unresolved):
		outcome = billing.OutcomeUnresolved
		processingError = sql.NullString{String: unresolved.Error(), Valid: true}
		p.log.InfoContext(ctx, unresolved.What, append([]any{"provider", provider, "event_id", ev.ID}, unresolved.IDs...)...)
	case errors.As(err, &invalid):
		outcome = billing.OutcomeInvalid
		processingError = sql.NullString{String: invalid.Msg, Valid: true}
		p.log.WarnContext(ctx, "webhook event cannot be processed", "provider", provider, "event_id", ev.ID, "error", invalid.Msg)
	case err != nil:
		return Processed{}, err
	}
	if processingError.Valid {
		if err := sp.rollBack(ctx, tx); err != nil {
			return Processed{}, err
		}
		w.changed, w.user = nil, ""
		if unresolved != nil {
			w.user = w.named // only on the event's record: the rollback left every canonical row as it was
		}
		w.record.before.set, w.record.after.set = false, false
	}
	columns, err := p.recordColumns(ctx, w, w.record)
	if err != nil {
		return Processed{}, err
	}
	return Processed{Outcome: outcome, UserID: w.user, Reason: processingError.String, changed: w.changed, columns: columns}, nil
}

// applyEvent reads the event through its adapter and applies what it says.
func (p *Pipeline) applyEvent(ctx context.Context, w *work, ev event) (string, error) {
	r, err := ev.reading()
	if err != nil {
		return "", err
	}
	if r.Ignore != "" {
		p.log.InfoContext(ctx, r.Ignore, "provider", w.cause.Provider, "event_id", ev.ID, "event_type", ev.Type)
		return billing.OutcomeIgnored, nil
	}
	return p.apply(ctx, w, r, ev.ID)
}
