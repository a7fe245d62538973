package billing

import (
	"context"
	"database/sql"
	"errors"

	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Canonical subscription statuses: every provider's states map onto these.
const (
	StatusActive    = "active"
	StatusTrialing  = "trialing"
	StatusPastDue   = "past_due"
	StatusCancelled = "cancelled"
	StatusExpired   = "expired"
	StatusRefunded  = "refunded"
)

// Processing outcomes, as logged and counted.
const (
	outcomeApplied    = "applied"
	outcomeDuplicate  = "duplicate"
	outcomeStale      = "stale"
	outcomeIgnored    = "ignored"
	outcomeUnresolved = "unresolved"
	outcomeInvalid    = "invalid"
)

// txn is the queries of one event's transaction, what caused it, and the users whose
// billing answer it changed: they are told (OnBillingChange) once it commits.
type txn struct {
	*dbq.Queries
	cause   ChangeCause
	changed []string
	user    string // the user the event resolved to, if it did
	// plansVersion is the plan catalogue's version, as the transaction's lock read it.
	plansVersion int64
	customerRead *customerRead // see upsertCustomer
}

// LockProviderSubscription locks the row (see the query) and notes the plan catalogue's
// version, which comes with it.
func (q *txn) LockProviderSubscription(ctx context.Context, arg dbq.LockProviderSubscriptionParams) (dbq.LockProviderSubscriptionRow, error) {
	row, err := q.Queries.LockProviderSubscription(ctx, arg)
	q.plansVersion = row.PlansVersion
	return row, err
}

// Processed is what became of an event: its outcome (applied, duplicate, stale, ignored,
// unresolved, invalid), the user it resolved to, and for unresolved and invalid events
// the reason stored with it.
type Processed struct {
	Outcome string
	UserID  string
	Reason  string
	changed []string
}

// processEvent runs the provider's processor over a stored event and marks it processed,
// unless marked says the statement that stored it already did. decoded is the web event
// already read from body, or nil. The processor's writes sit
// behind a savepoint: an event that resolves to no user or plan, or that can never be
// processed, leaves every canonical row exactly as it was, and its reason is stored on the
// event so that `events replay --unprocessed` finds it again. Any other error is returned
// so the transaction rolls back and the provider retries.
func (s *Service) processEvent(ctx context.Context, tx *sql.Tx, rowID, provider, eventID, eventType string, body []byte, decoded *webEvent, marked bool) (Processed, error) {
	if _, err := tx.ExecContext(ctx, "savepoint process_event"); err != nil {
		return Processed{}, err
	}
	q := &txn{Queries: dbq.New(tx), cause: ChangeCause{Provider: provider, ProviderEventID: eventID, EventType: eventType}}
	var outcome string
	var err error
	switch provider {
	case ProviderWeb:
		outcome, err = s.processWeb(ctx, q, eventID, body, decoded)
	case ProviderMobile:
		outcome, err = s.processMobile(ctx, q, eventID, body)
	}
	var perm permanentError
	var unresolved unresolvedError
	processingError := sql.NullString{}
	switch {
	case errors.As(err, &unresolved):
		outcome = outcomeUnresolved
		processingError = sql.NullString{String: unresolved.Error(), Valid: true}
		s.log.InfoContext(ctx, unresolved.what, append([]any{"provider", provider, "event_id", eventID}, unresolved.ids...)...)
	case errors.As(err, &perm):
		outcome = outcomeInvalid
		processingError = sql.NullString{String: perm.msg, Valid: true}
		s.log.WarnContext(ctx, "webhook event cannot be processed", "provider", provider, "event_id", eventID, "error", perm.msg)
	case err != nil:
		return Processed{}, err
	}
	if processingError.Valid {
		if _, err := tx.ExecContext(ctx, "rollback to savepoint process_event"); err != nil {
			return Processed{}, err
		}
		q.changed, q.user = nil, ""
	}
	if processingError.Valid || !marked {
		if err := q.MarkEventProcessed(ctx, dbq.MarkEventProcessedParams{ID: rowID, ProcessedAt: sql.NullTime{Time: s.now(), Valid: true}, ProcessingError: processingError}); err != nil {
			return Processed{}, err
		}
	}
	return Processed{Outcome: outcome, UserID: q.user, Reason: processingError.String, changed: q.changed}, nil
}

// providerSubscription is a locked provider_subscriptions row being worked on.
type providerSubscription = dbq.LockProviderSubscriptionRow

func (s *Service) saveProviderSubscription(ctx context.Context, q *txn, ps providerSubscription) error {
	return q.SaveProviderSubscription(ctx, dbq.SaveProviderSubscriptionParams{
		ID: ps.ID, ProviderCustomerID: ps.ProviderCustomerID, State: ps.State,
		LastEventID: ps.LastEventID, LastEventType: ps.LastEventType, LastEventAt: ps.LastEventAt,
		PaidThrough: ps.PaidThrough, PaidEventAt: ps.PaidEventAt, Now: s.now(),
	})
}
