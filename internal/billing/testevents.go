package billing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Test events, as "tollgate webhook send" sends them: which provider a payload looks like,
// and the same event moved to now.

// ShapeOf says which provider's event a JSON body looks like: web (an object "event" with a
// type and data, as Stripe sends), mobile (an event_type and a profile, as Adapty sends) or
// "" when it cannot tell.
func ShapeOf(body []byte) string {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return ""
	}
	switch {
	case text(top["object"]) == "event" && len(top["data"]) > 0:
		return ProviderWeb
	case len(top["event_type"]) > 0 && (len(top["profile_id"]) > 0 || len(top["event_properties"]) > 0):
		return ProviderMobile
	}
	return ""
}

// decodeTestEvent reads a test event for editing, its numbers kept as written.
func decodeTestEvent(body []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var top map[string]any
	if err := dec.Decode(&top); err != nil {
		return nil, errors.New("the file is not a JSON object")
	}
	return top, nil
}

// adaptyTime is how the mobile provider writes times.
const adaptyTime = "2006-01-02T15:04:05.000000-0700"

// MoveToNow shifts every time in a test event by the same amount, so that the event happens
// at now and the periods it describes start at the same offsets from now as they did from
// the event. A web event also gets a new id (the old one plus "_now" and the time), so
// that it is a new delivery; a mobile event's synthesised id follows its times already.
func MoveToNow(provider string, body []byte, now time.Time) ([]byte, error) {
	top, err := decodeTestEvent(body)
	if err != nil {
		return nil, err
	}
	switch provider {
	case ProviderWeb:
		created, err := numberOf(top["created"])
		if err != nil {
			return nil, errors.New(`a web event needs its "created" time`)
		}
		delta := now.Unix() - created
		shiftUnix(top, delta)
		if id, ok := top["id"].(string); ok {
			top["id"] = fmt.Sprintf("%s_now%d", id, now.Unix())
		}
	case ProviderMobile:
		at, ok := top["event_datetime"].(string)
		t, err := time.Parse(adaptyTime, at)
		if !ok || err != nil {
			return nil, errors.New(`a mobile event needs its "event_datetime"`)
		}
		shiftAdapty(top, now.Sub(t))
	}
	return json.MarshalIndent(top, "", "  ")
}

// isUnixTimeKey names the web provider's fields that hold Unix times.
func isUnixTimeKey(key string) bool {
	switch key {
	case "created", "date", "start", "end", "billing_cycle_anchor":
		return true
	}
	return strings.HasSuffix(key, "_at") || strings.HasSuffix(key, "_start") || strings.HasSuffix(key, "_end") || strings.HasSuffix(key, "_date")
}

func shiftUnix(v any, delta int64) {
	switch v := v.(type) {
	case map[string]any:
		for key, child := range v {
			if n, err := numberOf(child); err == nil && isUnixTimeKey(key) && n > 1e9 && n < 1e10 {
				v[key] = json.Number(fmt.Sprint(n + delta))
				continue
			}
			shiftUnix(child, delta)
		}
	case []any:
		for _, child := range v {
			shiftUnix(child, delta)
		}
	}
}

func shiftAdapty(v any, delta time.Duration) {
	switch v := v.(type) {
	case map[string]any:
		for key, child := range v {
			if s, ok := child.(string); ok {
				if t, err := time.Parse(adaptyTime, s); err == nil {
					v[key] = t.Add(delta).UTC().Format(adaptyTime)
				}
				continue
			}
			shiftAdapty(child, delta)
		}
	case []any:
		for _, child := range v {
			shiftAdapty(child, delta)
		}
	}
}

func numberOf(v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, errors.New("not a number")
	}
	return n.Int64()
}

// ForUser makes a test event name userID as its user: a web event's subscription carries
// it in metadata.user_id, under a customer of that user's own (so that sending the same
// file for two users links two customers); a mobile event carries it as customer_user_id.
func ForUser(provider string, body []byte, userID string) ([]byte, error) {
	top, err := decodeTestEvent(body)
	if err != nil {
		return nil, err
	}
	switch provider {
	case ProviderWeb:
		data, _ := top["data"].(map[string]any)
		obj, _ := data["object"].(map[string]any)
		if obj == nil || obj["object"] != "subscription" {
			return nil, errors.New("only a web event about a subscription (data.object of type subscription) names a user")
		}
		metadata, _ := obj["metadata"].(map[string]any)
		if metadata == nil {
			metadata = map[string]any{}
		}
		metadata["user_id"] = userID
		obj["metadata"] = metadata
		obj["customer"] = "cus_for_" + strings.ReplaceAll(userID, "-", "")
	case ProviderMobile:
		top["customer_user_id"] = userID
	}
	return json.MarshalIndent(top, "", "  ")
}
