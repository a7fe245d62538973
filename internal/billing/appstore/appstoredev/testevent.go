package appstoredev

// Test notifications written decoded, as `tollgate webhook send --provider appstore` reads
// them: how to tell one, and the edits --user and --now make before it is signed.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tollgate/tollgate/internal/billing"
)

// LooksLike says whether a JSON object looks like a decoded App Store notification.
func LooksLike(top map[string]json.RawMessage) bool {
	return len(top["notificationType"]) > 0 && len(top["notificationUUID"]) > 0
}

// ForUser makes the notification about userID's own subscription: its transaction names
// userID as its appAccountToken, and its notification and transaction ids become ones
// derived from userID (billing.ForUserID).
func ForUser(body []byte, userID string) ([]byte, error) {
	top, err := billing.DecodeEditable(body)
	if err != nil {
		return nil, err
	}
	data, _ := top["data"].(map[string]any)
	tx, _ := data["signedTransactionInfo"].(map[string]any)
	if tx == nil {
		return nil, errors.New("only a notification with a transaction (data.signedTransactionInfo) names a user")
	}
	billing.RewriteIDs(top, userID, billing.IDKeys("notificationUUID", "originalTransactionId", "transactionId", "webOrderLineItemId"))
	tx["appAccountToken"] = userID
	return json.MarshalIndent(top, "", "  ")
}

// MoveToNow moves the notification's dates (milliseconds, in fields named …Date) so that
// it is signed now (billing.MoveTimesToNow: the periods of one life's files stay in order),
// and gives it a new notificationUUID, so that it is a new delivery.
func MoveToNow(body []byte, now time.Time) ([]byte, error) {
	top, err := billing.DecodeEditable(body)
	if err != nil {
		return nil, err
	}
	signed, ok := top["signedDate"].(json.Number)
	ms, err := signed.Int64()
	if !ok || err != nil {
		return nil, errors.New(`an App Store notification needs its "signedDate"`)
	}
	billing.MoveTimesToNow(top, appStoreDates, "originalPurchaseDate", time.UnixMilli(ms), now)
	top["notificationUUID"] = uuid.NewString()
	return json.MarshalIndent(top, "", "  ")
}

// appStoreDates finds Apple's dates: milliseconds since the epoch in fields named …Date.
func appStoreDates(key string, value any) (time.Time, func(time.Time) any, bool) {
	n, ok := value.(json.Number)
	if !ok || !strings.HasSuffix(key, "Date") {
		return time.Time{}, nil, false
	}
	ms, err := n.Int64()
	if err != nil || ms <= 1e12 {
		return time.Time{}, nil, false
	}
	return time.UnixMilli(ms), func(t time.Time) any { return json.Number(fmt.Sprint(t.UnixMilli())) }, true
}
