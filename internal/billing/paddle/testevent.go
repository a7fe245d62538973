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

// MoveToNow moves a notification's times so that it occurs at now
// (billing.MoveTimesToNow: the periods of one life's files stay in order), and gives it a
// new event_id, so that it is a new delivery.
func MoveToNow(body []byte, now time.Time) ([]byte, error) {
	top, err := billing.DecodeEditable(body)
	if err != nil {
		return nil, err
	}
	occurred, err := time.Parse(time.RFC3339Nano, fmt.Sprint(top["occurred_at"]))
	if err != nil {
		return nil, errors.New(`a Paddle notification needs its "occurred_at" time`)
	}
	billing.MoveTimesToNow(top, paddleTimes, "started_at", occurred, now)
	if id, ok := top["event_id"].(string); ok {
		top["event_id"] = fmt.Sprintf("%s_now%d", id, now.Unix())
	}
	return json.MarshalIndent(top, "", "  ")
}

// paddleTimes finds Paddle's times: RFC 3339 in fields named …_at.
func paddleTimes(key string, value any) (time.Time, func(time.Time) any, bool) {
	s, ok := value.(string)
	if !ok || !strings.HasSuffix(key, "_at") {
		return time.Time{}, nil, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, nil, false
	}
	return t, func(t time.Time) any { return t.UTC().Format(time.RFC3339Nano) }, true
}
