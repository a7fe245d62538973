package playdev

// Test events for Google Play, as `tollgate webhook send --provider playstore` reads them:
// a notification and the purchase Google is to report for it, in one file.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/api/androidpublisher/v3"

	"github.com/tollgate/tollgate/internal/billing"
)

// Event is a Google Play test event: the Pub/Sub message id, the developer notification,
// and the purchase the stand-in reports for the notification's token.
type Event struct {
	MessageID            string                                   `json:"messageId"`
	Notification         map[string]any                           `json:"notification"`
	SubscriptionPurchase *androidpublisher.SubscriptionPurchaseV2 `json:"subscriptionPurchase,omitempty"`
	ProductPurchase      *androidpublisher.ProductPurchase        `json:"productPurchase,omitempty"`
}

// LooksLike says whether a JSON object looks like a Google Play test event.
func LooksLike(top map[string]json.RawMessage) bool {
	return len(top["notification"]) > 0 && (len(top["subscriptionPurchase"]) > 0 || len(top["productPurchase"]) > 0)
}

// ParseEvent reads a test event file.
func ParseEvent(body []byte) (Event, error) {
	var ev Event
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&ev); err != nil {
		return ev, fmt.Errorf("not a Google Play test event: %w", err)
	}
	if ev.MessageID == "" || ev.Notification == nil || (ev.SubscriptionPurchase == nil) == (ev.ProductPurchase == nil) {
		return ev, errors.New(`a Google Play test event needs "messageId", "notification" and a "subscriptionPurchase" (or "productPurchase")`)
	}
	return ev, nil
}

// PurchaseToken is the token the notification names.
func (ev Event) PurchaseToken() string {
	for _, key := range []string{"subscriptionNotification", "oneTimeProductNotification", "voidedPurchaseNotification"} {
		if n, ok := ev.Notification[key].(map[string]any); ok {
			token, _ := n["purchaseToken"].(string)
			return token
		}
	}
	return ""
}

// NewPurchase is a new purchase of a subscription to product for userID (none when ""),
// started at now for a month: what a buyer's first purchase in the app makes.
func NewPurchase(packageName, product, userID string, now time.Time) Event {
	token := "dev-" + randomHex(12)
	purchase := &androidpublisher.SubscriptionPurchaseV2{
		SubscriptionState: "SUBSCRIPTION_STATE_ACTIVE", AcknowledgementState: "ACKNOWLEDGEMENT_STATE_PENDING",
		StartTime: now.UTC().Format(time.RFC3339), RegionCode: "US", Kind: "androidpublisher#subscriptionPurchaseV2",
		LineItems: []*androidpublisher.SubscriptionPurchaseLineItem{{ProductId: product, ExpiryTime: now.AddDate(0, 1, 0).UTC().Format(time.RFC3339),
			AutoRenewingPlan: &androidpublisher.AutoRenewingPlan{AutoRenewEnabled: true}}},
	}
	if userID != "" {
		purchase.ExternalAccountIdentifiers = &androidpublisher.ExternalAccountIdentifiers{ObfuscatedExternalAccountId: userID}
	}
	return Event{MessageID: "dev-" + randomHex(8), SubscriptionPurchase: purchase, Notification: map[string]any{
		"version": "1.0", "packageName": packageName, "eventTimeMillis": fmt.Sprint(now.UnixMilli()),
		"subscriptionNotification": map[string]any{"version": "1.0", "notificationType": 4, "purchaseToken": token, "subscriptionId": product},
	}}
}

// ForUser makes the event about userID's own purchase: the purchase names userID as its
// obfuscated account id, and its token, order and message ids become ones derived from
// userID (billing.ForUserID).
func ForUser(body []byte, userID string) ([]byte, error) {
	top, err := billing.DecodeEditable(body)
	if err != nil {
		return nil, err
	}
	purchase, _ := top["subscriptionPurchase"].(map[string]any)
	if purchase == nil {
		purchase, _ = top["productPurchase"].(map[string]any)
	}
	if purchase == nil {
		return nil, errors.New(`a Google Play test event needs its "subscriptionPurchase" (or "productPurchase")`)
	}
	billing.RewriteIDs(top, userID, billing.IDKeys("messageId", "purchaseToken", "linkedPurchaseToken", "latestSuccessfulOrderId", "orderId"))
	if _, ok := top["subscriptionPurchase"]; ok {
		ids, _ := purchase["externalAccountIdentifiers"].(map[string]any)
		if ids == nil {
			ids = map[string]any{}
		}
		ids["obfuscatedExternalAccountId"] = userID
		purchase["externalAccountIdentifiers"] = ids
	} else {
		purchase["obfuscatedExternalAccountId"] = userID
	}
	return json.MarshalIndent(top, "", "  ")
}

// MoveToNow moves the event's times (the notification's eventTimeMillis, the purchase's
// RFC 3339 times and its …Millis) so that it happens at now (billing.MoveTimesToNow: the
// periods of one life's files stay in order), and gives it a new message id, so that it is
// a new delivery.
func MoveToNow(body []byte, now time.Time) ([]byte, error) {
	top, err := billing.DecodeEditable(body)
	if err != nil {
		return nil, err
	}
	n, _ := top["notification"].(map[string]any)
	var at int64
	if n != nil {
		_, err = fmt.Sscan(fmt.Sprint(n["eventTimeMillis"]), &at)
	}
	if n == nil || err != nil || at <= 0 {
		return nil, errors.New(`a Google Play test event needs its notification's "eventTimeMillis"`)
	}
	billing.MoveTimesToNow(top, playTimes, "startTime", time.UnixMilli(at), now)
	if id, ok := top["messageId"].(string); ok {
		top["messageId"] = fmt.Sprintf("%s-now%d", id, now.Unix())
	}
	return json.MarshalIndent(top, "", "  ")
}

// playTimes finds Google's times: RFC 3339 in fields named …Time, milliseconds (a string or
// a number) in fields named …Millis, written back as a string.
func playTimes(key string, value any) (time.Time, func(time.Time) any, bool) {
	switch {
	case strings.HasSuffix(key, "Time"):
		if s, ok := value.(string); ok {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				return t, func(t time.Time) any { return t.UTC().Format(time.RFC3339Nano) }, true
			}
		}
	case strings.HasSuffix(key, "Millis"):
		var ms int64
		if _, err := fmt.Sscan(fmt.Sprint(value), &ms); err == nil && ms > 1e12 {
			return time.UnixMilli(ms), func(t time.Time) any { return fmt.Sprint(t.UnixMilli()) }, true
		}
	}
	return time.Time{}, nil, false
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
