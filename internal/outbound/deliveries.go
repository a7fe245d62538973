package outbound

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Delivery states.
const (
	Pending   = "pending"
	Delivered = "delivered"
	Failed    = "failed"
)

// Delivery is one outbound event and how its delivery stands.
type Delivery struct {
	ID            int64      `json:"id"`
	MessageID     string     `json:"message_id"`
	UserID        string     `json:"user_id"`
	EventType     string     `json:"event_type"`
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	DeliveredAt   *time.Time `json:"delivered_at,omitempty"`
}

// Filter selects deliveries; zero fields match all.
type Filter struct {
	Status string
	UserID string
	Limit  int
	// Skip passes over that many of the newest, for a page further down.
	Skip int
}

// List returns the newest deliveries that match f, at most f.Limit (default 100), past the
// first f.Skip.
func List(ctx context.Context, d *db.DB, f Filter) ([]Delivery, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	if err := moveAllRecorded(ctx, d); err != nil {
		return nil, err
	}
	rows, err := dbq.New(d).ListDeliveries(ctx, dbq.ListDeliveriesParams{Status: f.Status, UserID: f.UserID, Max: int32(f.Limit), Skip: int32(f.Skip)})
	if err != nil {
		return nil, err
	}
	out := make([]Delivery, len(rows))
	for i, r := range rows {
		out[i] = Delivery{
			ID: r.ID, MessageID: r.MessageID, UserID: r.UserID, EventType: r.EventType, Status: r.Status,
			Attempts: int(r.Attempts), LastError: r.LastError.String, CreatedAt: r.CreatedAt.UTC(),
		}
		if r.Status == Pending {
			next := r.NextAttemptAt.UTC()
			out[i].NextAttemptAt = &next
		}
		if r.DeliveredAt.Valid {
			at := r.DeliveredAt.Time.UTC()
			out[i].DeliveredAt = &at
		}
	}
	return out, nil
}

// Retry makes a pending or failed delivery due now, retried for another RetryWindow. It
// reports false when there is no such delivery, or it was delivered.
func Retry(ctx context.Context, d *db.DB, id int64, now time.Time) (bool, error) {
	if err := moveAllRecorded(ctx, d); err != nil {
		return false, err
	}
	n, err := dbq.New(d).RetryDelivery(ctx, dbq.RetryDeliveryParams{ID: id, Now: now.UTC(), GiveUpAt: now.UTC().Add(RetryWindow)})
	return n > 0, err
}

// UserOf is the user delivery id is about; "" when there is no such delivery.
func UserOf(ctx context.Context, d *db.DB, id int64) (string, error) {
	user, err := dbq.New(d).DeliveryUser(ctx, id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return user, err
}

// RetryFailed makes every failed delivery due now, and says how many there were.
func RetryFailed(ctx context.Context, d *db.DB, now time.Time) (int64, error) {
	if err := moveAllRecorded(ctx, d); err != nil {
		return 0, err
	}
	return dbq.New(d).RetryFailedDeliveries(ctx, dbq.RetryFailedDeliveriesParams{Now: now.UTC(), GiveUpAt: now.UTC().Add(RetryWindow)})
}

// moveAllRecorded moves every recorded event into outbound_deliveries, so that the commands
// see them whether or not a deliverer has run since they were recorded.
func moveAllRecorded(ctx context.Context, d *db.DB) error {
	n, err := dbq.New(d).CountNewEvents(ctx)
	if err != nil {
		return err
	}
	for range n/moveBatch + 1 {
		err := d.InTx(ctx, func(tx *sql.Tx) error {
			_, err := moveRecorded(ctx, d, dbq.New(tx), 0, time.Time{})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
