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
// that made the change the event tells of, on a database of engine: committed together,
// or not at all. The event waits in outbound_new_events, which has no index to update,
// until a deliverer makes its first attempt, whose outcome takes it into
// outbound_deliveries (migration 00010): what ingestion pays for an event is one narrow
// insert.
func Record(ctx context.Context, q *dbq.Queries, engine db.Engine, userID, eventType string, payload []byte, now time.Time) error {
	if engine == db.Postgres {
		return q.InsertOutboundEvent(ctx, dbq.InsertOutboundEventParams{
			MessageID: newMessageID(), UserID: userID, EventType: eventType, Payload: string(payload),
			Now: now, GiveUpAt: now.Add(RetryWindow),
		})
	}
	return q.InsertOutboundEventNumbered(ctx, dbq.InsertOutboundEventNumberedParams{
		MessageID: newMessageID(), UserID: userID, EventType: eventType, Payload: string(payload),
		Now: now, GiveUpAt: now.Add(RetryWindow),
	})
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
