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

// MoveToNow shifts every time in a mobile event by the same amount, so that the event
// happens at now; its synthesised id follows its times.
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
	shift(top, now.Sub(t))
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

func shift(v any, delta time.Duration) {
	switch v := v.(type) {
	case map[string]any:
		for key, child := range v {
			if s, ok := child.(string); ok {
				if t, err := time.Parse(adaptyTime, s); err == nil {
					v[key] = t.Add(delta).UTC().Format(adaptyTime)
				}
				continue
			}
			shift(child, delta)
		}
	case []any:
		for _, child := range v {
			shift(child, delta)
		}
	}
}
