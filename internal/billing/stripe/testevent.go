package stripe

// Test events, as "tollgate webhook send" sends them.

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// LooksLike says whether a JSON object looks like a web event: an object "event" with a
// type and data, as Stripe sends.
func LooksLike(top map[string]json.RawMessage) bool {
	return billing.Text(top["object"]) == "event" && len(top["data"]) > 0
}

// MoveToNow moves a web event's times so that it happens at now (billing.MoveTimesToNow:
// the periods of one life's files stay in order), and gives it a new id (the old one plus
// "_now" and the time), so that it is a new delivery.
func MoveToNow(body []byte, now time.Time) ([]byte, error) {
	top, err := billing.DecodeEditable(body)
	if err != nil {
		return nil, err
	}
	created, err := numberOf(top["created"])
	if err != nil {
		return nil, errors.New(`a web event needs its "created" time`)
	}
	billing.MoveTimesToNow(top, unixTimes, "start_date", time.Unix(created, 0), now)
	if id, ok := top["id"].(string); ok {
		top["id"] = fmt.Sprintf("%s_now%d", id, now.Unix())
	}
	return json.MarshalIndent(top, "", "  ")
}

// ForUser makes a web event about userID's own subscription: every customer, subscription,
// invoice and event id in it becomes one derived from userID (billing.ForUserID), and a
// subscription carries userID in metadata.user_id, as a checkout's does.
func ForUser(body []byte, userID string) ([]byte, error) {
	top, err := billing.DecodeEditable(body)
	if err != nil {
		return nil, err
	}
	data, _ := top["data"].(map[string]any)
	obj, _ := data["object"].(map[string]any)
	if obj == nil {
		return nil, errors.New("a web event needs its data.object")
	}
	billing.RewriteIDs(top, userID, func(_, value string) bool {
		return slices.ContainsFunc(userScopedPrefixes, func(prefix string) bool { return strings.HasPrefix(value, prefix) })
	})
	if obj["object"] == "subscription" {
		metadata, _ := obj["metadata"].(map[string]any)
		if metadata == nil {
			metadata = map[string]any{}
		}
		metadata["user_id"] = userID
		obj["metadata"] = metadata
	}
	return json.MarshalIndent(top, "", "  ")
}

// userScopedPrefixes begin the web provider's ids that belong to one customer; prices
// and products are shared by every customer and keep theirs.
var userScopedPrefixes = []string{"evt_", "cus_", "sub_", "si_", "in_", "il_", "ii_", "pi_", "ch_"}

// isUnixTimeKey names the web provider's fields that hold Unix times.
func isUnixTimeKey(key string) bool {
	switch key {
	case "created", "date", "start", "end", "billing_cycle_anchor":
		return true
	}
	return strings.HasSuffix(key, "_at") || strings.HasSuffix(key, "_start") || strings.HasSuffix(key, "_end") || strings.HasSuffix(key, "_date")
}

// unixTimes finds Stripe's times: seconds since the epoch in a time's field.
func unixTimes(key string, value any) (time.Time, func(time.Time) any, bool) {
	n, err := numberOf(value)
	if err != nil || !isUnixTimeKey(key) || n <= 1e9 || n >= 1e10 {
		return time.Time{}, nil, false
	}
	return time.Unix(n, 0), func(t time.Time) any { return json.Number(fmt.Sprint(t.Unix())) }, true
}

func numberOf(v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, errors.New("not a number")
	}
	return n.Int64()
}
