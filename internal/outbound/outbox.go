// Package outbound delivers tollgate's own webhooks to the app's backend: events recorded in
// an outbox table by the transaction that caused them, then POSTed to OUTBOUND_WEBHOOK_URL,
// signed per the Standard Webhooks specification, retried with backoff, one user's events
// in order, by one instance at a time.
package outbound

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// RetryWindow is how long a delivery is retried before it is marked failed.
const RetryWindow = 72 * time.Hour

// Record adds an event for userID to the outbox through q, which should be the transaction
// that made the change the event tells of: committed together, or not at all. The event
// waits in outbound_new_events, which has no index to update, until the deliverer (or a
// command that lists or retries deliveries) moves it into outbound_deliveries: what
// ingestion pays for an event is one narrow insert (migration 00010).
func Record(ctx context.Context, q *dbq.Queries, userID, eventType string, payload []byte, now time.Time) error {
	return q.InsertOutboundEvent(ctx, NewEvent(userID, eventType, payload, now))
}

// NewEvent is the outbox row Record inserts, for a statement that inserts it along with
// the change it tells of.
func NewEvent(userID, eventType string, payload []byte, now time.Time) dbq.InsertOutboundEventParams {
	return dbq.InsertOutboundEventParams{
		MessageID: newMessageID(), UserID: userID, EventType: eventType, Payload: string(payload),
		Now: now, GiveUpAt: now.Add(RetryWindow),
	}
}

// moveBatch bounds one move, so that a backlog (the deliverer was not running) is taken in
// by several short transactions rather than one long one.
const moveBatch = 10_000

// moveRecorded moves recorded events, oldest first, into outbound_deliveries as pending
// deliveries due now, at most moveBatch of them, through q, a transaction on d. On
// Postgres it also leases up to claim of them, as ClaimDeliveries would, and gives those:
// a delivery claimed as it goes in is written once rather than twice.
func moveRecorded(ctx context.Context, d *db.DB, q *dbq.Queries, claim int, leaseUntil time.Time) ([]dbq.ClaimDeliveriesRow, error) {
	if d.Engine == db.Postgres {
		if err := q.LockOutboundMove(ctx); err != nil {
			return nil, err
		}
		rows, err := q.MoveNewEvents(ctx, dbq.MoveNewEventsParams{Max: moveBatch, Claim: int32(claim), LeaseUntil: leaseUntil})
		claimed := make([]dbq.ClaimDeliveriesRow, len(rows))
		for i, r := range rows {
			claimed[i] = dbq.ClaimDeliveriesRow(r)
		}
		return claimed, err
	}
	last, err := q.LastNewEventToMove(ctx, moveBatch)
	if err != nil || last == 0 {
		return nil, err
	}
	if err := q.CopyNewEventsUpTo(ctx, last); err != nil {
		return nil, err
	}
	return nil, q.DeleteNewEventsUpTo(ctx, last)
}

// newMessageID is the webhook-id of a delivery, the same on every attempt, by which
// receivers deduplicate.
func newMessageID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return "msg_" + hex.EncodeToString(b)
}

// Sign is the webhook-signature header for one attempt: "v1," and the base64 HMAC-SHA256,
// under the secret's key, of "<webhook-id>.<webhook-timestamp>.<body>".
func Sign(key []byte, messageID string, at time.Time, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(messageID + "." + strconv.FormatInt(at.Unix(), 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
