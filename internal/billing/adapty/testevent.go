package adapty

// Test events, as "tollgate webhook send" sends them.

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// LooksLike says whether a JSON object looks like a mobile event: an event_type and a
// profile, as Adapty sends.
func LooksLike(top map[string]json.RawMessage) bool {
	return len(top["event_type"]) > 0 && (len(top["profile_id"]) > 0 || len(top["event_properties"]) > 0)
}

// adaptyTime is how the mobile provider writes times.
const adaptyTime = "2006-01-02T15:04:05.000000-0700"

// MoveToNow moves a mobile event's times so that it happens at now
// (billing.MoveTimesToNow); its synthesised id follows its times.
func MoveToNow(body []byte, now time.Time) ([]byte, error) {
	top, err := billing.DecodeEditable(body)
	if err != nil {
		return nil, err
	}
	at, ok := top["event_datetime"].(string)
	t, err := time.Parse(adaptyTime, at)
	if !ok || err != nil {
		return nil, errors.New(`a mobile event needs its "event_datetime"`)
	}
	billing.MoveTimesToNow(top, mobileTimes, "original_purchase_date", t, now)
	return json.MarshalIndent(top, "", "  ")
}

// ForUser makes a mobile event about userID's own subscription: it names userID as its
// customer_user_id, and its profile and transaction ids become ones derived from userID
// (billing.ForUserID).
func ForUser(body []byte, userID string) ([]byte, error) {
	top, err := billing.DecodeEditable(body)
	if err != nil {
		return nil, err
	}
	billing.RewriteIDs(top, userID, billing.IDKeys("event_id", "profile_id", "profile_event_id", "original_transaction_id", "transaction_id"))
	top["customer_user_id"] = userID
	return json.MarshalIndent(top, "", "  ")
}

// mobileTimes finds the mobile provider's times: strings in its layout.
func mobileTimes(_ string, value any) (time.Time, func(time.Time) any, bool) {
	s, ok := value.(string)
	if !ok {
		return time.Time{}, nil, false
	}
	t, err := time.Parse(adaptyTime, s)
	if err != nil {
		return time.Time{}, nil, false
	}
	return t, func(t time.Time) any { return t.UTC().Format(adaptyTime) }, true
}
