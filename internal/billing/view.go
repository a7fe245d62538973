package billing

import (
	"bytes"
	"encoding/json"
	"time"
)

// BillingView is a user's billing answer in the one shape every surface shows: the
// "billing" object of /api/v1/me, the account page, and what operators and other backends
// are shown. It describes the governing subscription, or with none the newest one.
type BillingView struct {
	Subscribed       bool                 `json:"subscribed"`
	Status           *string              `json:"status"`
	Provider         *string              `json:"provider"`
	Plan             *Plan                `json:"plan"`
	CurrentPeriodEnd *time.Time           `json:"current_period_end"`
	Entitlements     map[string]any       `json:"entitlements"`
	Usage            map[string]UsageView `json:"usage"`
}

// UsageView is one metered entitlement's counter in the current period.
type UsageView struct {
	Used      int64     `json:"used"`
	Limit     int64     `json:"limit"`
	PeriodEnd time.Time `json:"period_end"`
}

// Usage is a counter after recording.
type Usage struct {
	Name      string    `json:"name"`
	Used      int64     `json:"used"`
	Limit     int64     `json:"limit"`
	Remaining int64     `json:"remaining"`
	PeriodEnd time.Time `json:"period_end"`
}

// Entitled reports whether name is true or a number above zero, as Entitlements.Entitled.
func (v BillingView) Entitled(name string) bool { return Grants(v.Entitlements[name]) }

// StatusShown is the status people are shown at t for the view's subscription (see
// billing.StatusShown): "" without one.
func (v BillingView) StatusShown(t time.Time) string {
	if v.Status == nil {
		return ""
	}
	return StatusShown(*v.Status, v.CurrentPeriodEnd, t)
}

// ViewOf is the view of a position and its usage counters.
func ViewOf(e Entitlements, used map[string]int64) BillingView {
	v := BillingView{Subscribed: e.Subscribed(), Plan: e.Plan(), Entitlements: e.Effective, Usage: map[string]UsageView{}}
	shown := e.Governing()
	if shown == nil && len(e.Subscriptions) > 0 {
		shown = &e.Subscriptions[0]
	}
	if shown != nil {
		status := shown.Shown(e.At)
		v.Status, v.Provider, v.CurrentPeriodEnd = &status, &shown.Provider, shown.CurrentPeriodEnd
	}
	for name := range e.Effective {
		if limit, ok := e.Limit(name); ok {
			v.Usage[name] = UsageView{Used: used[name], Limit: limit, PeriodEnd: e.UsagePeriodEnd()}
		}
	}
	return v
}

// EncodeView is v (a view, or the view held) as JSON, as every surface sends it: HTML
// characters unescaped, no trailing newline.
func EncodeView[V BillingView | HeldView](v V) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Change is a user's answer before and after a write, encoded as a receiver sees them.
type Change struct {
	UserID            string
	Previous, Current json.RawMessage
}

// Compare encodes two views of one user and says whether the answer moved: the one rule
// for what counts as a change of a user's billing answer.
func Compare(userID string, previous, current BillingView) (Change, bool, error) {
	previousJSON, err := json.Marshal(previous)
	if err != nil {
		return Change{}, false, err
	}
	currentJSON, err := json.Marshal(current)
	if err != nil {
		return Change{}, false, err
	}
	return Change{UserID: userID, Previous: previousJSON, Current: currentJSON}, !bytes.Equal(previousJSON, currentJSON), nil
}

// changeEvent is the body of an entitlements.changed webhook.
type changeEvent struct {
	Type      string     `json:"type"`
	Timestamp string     `json:"timestamp"`
	Data      changeData `json:"data"`
}

type changeData struct {
	UserID   string          `json:"user_id"`
	Previous json.RawMessage `json:"previous"`
	Current  json.RawMessage `json:"current"`
	Cause    ChangeCause     `json:"cause"`
}

// Body is the entitlements.changed event announcing the change, caused by cause at now.
func (c Change) Body(cause ChangeCause, now time.Time) ([]byte, error) {
	return json.Marshal(changeEvent{Type: EntitlementsChanged, Timestamp: now.Format(time.RFC3339), Data: changeData{
		UserID: c.UserID, Previous: c.Previous, Current: c.Current, Cause: cause,
	}})
}

// HeldView is the view an app holds rather than asks for — the billing of an entitlement
// token and of the access token's tollgate claim: the view without usage, which changes
// with every use. EntitlementsOmitted says the entitlements were left out (Entitlements
// null) to keep a token small; it is absent otherwise.
type HeldView struct {
	Subscribed          bool           `json:"subscribed"`
	Status              *string        `json:"status"`
	Provider            *string        `json:"provider"`
	Plan                *Plan          `json:"plan"`
	CurrentPeriodEnd    *time.Time     `json:"current_period_end"`
	Entitlements        map[string]any `json:"entitlements"`
	EntitlementsOmitted bool           `json:"entitlements_omitted,omitempty"`
}

// Held is v without its usage.
func (v BillingView) Held() HeldView {
	return HeldView{Subscribed: v.Subscribed, Status: v.Status, Provider: v.Provider, Plan: v.Plan,
		CurrentPeriodEnd: v.CurrentPeriodEnd, Entitlements: v.Entitlements}
}
