package playstore

// Google Play's real-time developer notifications, as a Cloud Pub/Sub push delivers them.

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"google.golang.org/api/androidpublisher/v3"

	"github.com/tollgate/tollgate/internal/billing"
)

// push is the body Pub/Sub posts; Data is the base64 notification, decoded by encoding/json.
type push struct {
	Message struct {
		Data      []byte `json:"data"`
		MessageID string `json:"messageId"`
	} `json:"message"`
}

// notification is a DeveloperNotification.
type notification struct {
	PackageName                string                    `json:"packageName"`
	EventTimeMillis            longValue                 `json:"eventTimeMillis"`
	SubscriptionNotification   *subscriptionNotification `json:"subscriptionNotification"`
	OneTimeProductNotification *struct {
		NotificationType int    `json:"notificationType"`
		PurchaseToken    string `json:"purchaseToken"`
		Sku              string `json:"sku"`
	} `json:"oneTimeProductNotification"`
	VoidedPurchaseNotification *struct {
		PurchaseToken string `json:"purchaseToken"`
		OrderID       string `json:"orderId"`
	} `json:"voidedPurchaseNotification"`
	TestNotification *struct{} `json:"testNotification"`
}

// longValue is a field Google types long: its examples quote it ("1503349566168"), as
// JSON carries 64-bit integers in proto3, but a number is the same value. It keeps the
// digits either way.
type longValue string

func (v *longValue) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = longValue(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*v = longValue(n.String())
	return nil
}

// subscriptionNotification is a notification about a subscription purchase.
type subscriptionNotification struct {
	NotificationType int    `json:"notificationType"`
	PurchaseToken    string `json:"purchaseToken"`
	SubscriptionID   string `json:"subscriptionId"`
}

// subscriptionRevoked is the subscription notification type of a revoked subscription.
const subscriptionRevoked = 12

// eventTime is when Google says the notification's event happened.
func (n notification) eventTime() (time.Time, bool) {
	ms, err := strconv.ParseInt(string(n.EventTimeMillis), 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms).UTC(), true
}

// SubscriptionTypes are Google's names of the subscription notification types, by their
// number (the real-time developer notifications reference). Events are stored, shown and
// filtered by these names; an unknown number is stored as "subscription.<number>".
var SubscriptionTypes = map[int]string{
	1: "SUBSCRIPTION_RECOVERED", 2: "SUBSCRIPTION_RENEWED", 3: "SUBSCRIPTION_CANCELED", 4: "SUBSCRIPTION_PURCHASED",
	5: "SUBSCRIPTION_ON_HOLD", 6: "SUBSCRIPTION_IN_GRACE_PERIOD", 7: "SUBSCRIPTION_RESTARTED",
	8: "SUBSCRIPTION_PRICE_CHANGE_CONFIRMED", 9: "SUBSCRIPTION_DEFERRED", 10: "SUBSCRIPTION_PAUSED",
	11: "SUBSCRIPTION_PAUSE_SCHEDULE_CHANGED", 12: "SUBSCRIPTION_REVOKED", 13: "SUBSCRIPTION_EXPIRED",
	19: "SUBSCRIPTION_PRICE_CHANGE_UPDATED", 20: "SUBSCRIPTION_PENDING_PURCHASE_CANCELED",
}

// oneTimeProductTypes are Google's names of the one-time product notification types.
var oneTimeProductTypes = map[int]string{1: "ONE_TIME_PRODUCT_PURCHASED", 2: "ONE_TIME_PRODUCT_CANCELED"}

// TypeNumber is the notificationType Google numbers an event type with ("4" for
// SUBSCRIPTION_PURCHASED), shown beside the name; "" for a type Google does not number.
func TypeNumber(eventType string) string {
	for n, name := range SubscriptionTypes {
		if name == eventType {
			return strconv.Itoa(n)
		}
	}
	for n, name := range oneTimeProductTypes {
		if name == eventType {
			return strconv.Itoa(n)
		}
	}
	return ""
}

// kind names the notification, as its event type: Google's name of its type.
func (n notification) kind() string {
	switch {
	case n.SubscriptionNotification != nil:
		t := n.SubscriptionNotification.NotificationType
		if name, ok := SubscriptionTypes[t]; ok {
			return name
		}
		return "subscription." + strconv.Itoa(t)
	case n.VoidedPurchaseNotification != nil:
		return "voided"
	case n.OneTimeProductNotification != nil:
		if name, ok := oneTimeProductTypes[n.OneTimeProductNotification.NotificationType]; ok {
			return name
		}
		return "one_time_product"
	case n.TestNotification != nil:
		return "test"
	}
	return "unknown"
}

// parsed is a push decoded, and what Google's API said of its purchase when it was read.
type parsed struct {
	id           string
	notification notification
	purchase     *androidpublisher.SubscriptionPurchaseV2
	product      *androidpublisher.ProductPurchase // a one-time product's purchase
	read         time.Time                         // when purchase or product was read
	unknown      bool                              // Google does not know the purchase token
}

// decode reads a push body into its message id and notification.
func decode(body []byte) (*parsed, error) {
	var p push
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, billing.BadJSON(errors.New(`the body is not a Pub/Sub push ({"message": {"data": …}})`))
	}
	var n notification
	if err := json.Unmarshal(p.Message.Data, &n); err != nil || len(p.Message.Data) == 0 {
		return nil, billing.BadJSON(errors.New("the message's data is not a developer notification"))
	}
	id, field := p.Message.MessageID, "messageId"
	if v := n.VoidedPurchaseNotification; v != nil && v.OrderID != "" {
		id, field = voidID(v.OrderID), "orderId" // the void, however it was heard
	}
	if err := billing.CheckEventID(field, id); err != nil {
		return nil, billing.BadEventID(err)
	}
	return &parsed{id: id, notification: n}, nil
}
