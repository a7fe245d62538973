package outbound

import (
	"cmp"
	"context"
	"slices"
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
}

// List returns the newest deliveries that match f, at most f.Limit (default 100): those
// attempted, and the recorded events not yet attempted or in their first attempt, which are
// pending.
func List(ctx context.Context, d *db.DB, f Filter) ([]Delivery, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	q := dbq.New(d)
	rows, err := q.ListDeliveries(ctx, dbq.ListDeliveriesParams{Status: f.Status, UserID: f.UserID, Max: int32(f.Limit)})
	if err != nil {
		return nil, err
	}
	var out []Delivery
	for _, r := range rows {
		del := Delivery{
			ID: r.ID, MessageID: r.MessageID, UserID: r.UserID, EventType: r.EventType, Status: r.Status,
			Attempts: int(r.Attempts), LastError: r.LastError.String, CreatedAt: r.CreatedAt.UTC(),
		}
		if r.Status == Pending {
			next := r.NextAttemptAt.UTC()
			del.NextAttemptAt = &next
		}
		if r.DeliveredAt.Valid {
			at := r.DeliveredAt.Time.UTC()
			del.DeliveredAt = &at
		}
		out = append(out, del)
	}
	if f.Status != "" && f.Status != Pending {
		return out, nil
	}
	recorded, err := q.ListNewEvents(ctx, dbq.ListNewEventsParams{UserID: f.UserID, Max: int32(f.Limit)})
	if err != nil {
		return nil, err
	}
	for _, r := range recorded {
		next := r.CreatedAt.UTC()
		del := Delivery{
			ID: r.ID, MessageID: r.MessageID, UserID: r.UserID, EventType: r.EventType, Status: Pending,
			CreatedAt: r.CreatedAt.UTC(), NextAttemptAt: &next,
		}
		if r.LeaseUntil.Valid {
			del.Attempts = 1 // under way
		}
		out = append(out, del)
	}
	slices.SortFunc(out, func(a, b Delivery) int { return cmp.Compare(b.ID, a.ID) })
	return out[:min(len(out), f.Limit)], nil
}

// Retry makes a pending or failed delivery due now, retried for another RetryWindow. It
// reports false when there is no such delivery, or it was delivered.
func Retry(ctx context.Context, d *db.DB, id int64, now time.Time) (bool, error) {
	q := dbq.New(d)
	n, err := q.RetryDelivery(ctx, dbq.RetryDeliveryParams{ID: id, Now: now.UTC(), GiveUpAt: now.UTC().Add(RetryWindow)})
	if err != nil || n > 0 {
		return n > 0, err
	}
	// Not yet attempted, or in its first attempt: due already.
	n, err = q.IsNewEvent(ctx, id)
	return n > 0, err
}

// RetryFailed makes every failed delivery due now, and says how many there were.
func RetryFailed(ctx context.Context, d *db.DB, now time.Time) (int64, error) {
	return dbq.New(d).RetryFailedDeliveries(ctx, dbq.RetryFailedDeliveriesParams{Now: now.UTC(), GiveUpAt: now.UTC().Add(RetryWindow)})
}
