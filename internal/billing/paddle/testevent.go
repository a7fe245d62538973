package paddle

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// Test events, as "tollgate webhook send --provider paddle" sends them.

// LooksLike says whether a JSON object is a Paddle notification.
func LooksLike(top map[string]json.RawMessage) bool {
	return strings.HasPrefix(billing.Text(top["event_id"]), "evt_") && len(top["occurred_at"]) > 0 && len(top["data"]) > 0
}

// userScoped begin Paddle's ids that belong to one customer; prices and products are
// shared by every customer and keep theirs.
var userScoped = []string{"evt_", "ntf_", "sub_", "ctm_", "txn_", "adj_", "add_", "biz_", "inv_"}

// ForUser makes a notification about userID's own subscription: every customer,
// subscription, transaction and adjustment id becomes one derived from userID
// (billing.ForUserID), and the entity carries userID in custom_data.user_id, as a
// checkout's does.
func ForUser(body []byte, userID string) ([]byte, error) {
	top, err := billing.DecodeEditable(body)
	if err != nil {
		return nil, err
	}
	data, _ := top["data"].(map[string]any)
	if data == nil {
		return nil, errors.New(`a Paddle notification needs its "data"`)
	}
	billing.RewriteIDs(top, userID, func(_, value string) bool {
		return slices.ContainsFunc(userScoped, func(prefix string) bool { return strings.HasPrefix(value, prefix) })
	})
	if _, isAdjustment := data["action"]; !isAdjustment {
		custom, _ := data["custom_data"].(map[string]any)
		if custom == nil {
			custom = map[string]any{}
		}
		custom["user_id"] = userID
		data["custom_data"] = custom
	}
	return json.MarshalIndent(top, "", "  ")
}

// MoveToNow shifts every time in a notification by the same amount, so that it occurs
// at now and the periods it describes start at the same offsets from now as they did from
// it, and gives it a new event_id, so that it is a new delivery.
func MoveToNow(body []byte, now time.Time) ([]byte, error) {
	top, err := billing.DecodeEditable(body)
	if err != nil {
		return nil, err
	}
	occurred, err := time.Parse(time.RFC3339Nano, fmt.Sprint(top["occurred_at"]))
	if err != nil {
		return nil, errors.New(`a Paddle notification needs its "occurred_at" time`)
	}
	shiftTimes(top, now.Sub(occurred))
	if id, ok := top["event_id"].(string); ok {
		top["event_id"] = fmt.Sprintf("%s_now%d", id, now.Unix())
	}
	return json.MarshalIndent(top, "", "  ")
}

// shiftTimes moves every RFC 3339 time in v (a key ending _at) by d.
func shiftTimes(v any, d time.Duration) {
	switch v := v.(type) {
	case map[string]any:
		for key, child := range v {
			if s, ok := child.(string); ok && strings.HasSuffix(key, "_at") {
				if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
					v[key] = t.Add(d).UTC().Format(time.RFC3339Nano)
				}
				continue
			}
			shiftTimes(child, d)
		}
	case []any:
		for _, child := range v {
			shiftTimes(child, d)
		}
	}
}
