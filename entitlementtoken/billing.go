package entitlementtoken

import "time"

// Billing is a user's billing answer as a token carries it: the billing object tollgate's
// GET /api/v1/me answers, without usage.
type Billing struct {
	// Subscribed says a subscription (or a grant) entitles the user now.
	Subscribed bool `json:"subscribed"`
	// Status, Provider and CurrentPeriodEnd are those of the subscription shown (nil with none).
	Status           *string    `json:"status"`
	Provider         *string    `json:"provider"`
	Plan             *Plan      `json:"plan"`
	CurrentPeriodEnd *time.Time `json:"current_period_end"`
	// Entitlements are the plan's values in force: true/false, or a number (a limit). Nil
	// when EntitlementsOmitted.
	Entitlements map[string]any `json:"entitlements"`
	// EntitlementsOmitted says the entitlements were too large for a token (about 2 KiB):
	// ask tollgate's API for them.
	EntitlementsOmitted bool `json:"entitlements_omitted,omitempty"`
}

// Plan names the plan in force.
type Plan struct {
	Key  string `json:"key"`
	Name string `json:"name"`
}

// Entitled reports whether the entitlement name is true or a limit above zero.
func (b Billing) Entitled(name string) bool {
	switch v := b.Entitlements[name].(type) {
	case bool:
		return v
	case float64:
		return v > 0
	}
	return false
}

// Limit is the numeric value of the entitlement name, if it has one.
func (b Billing) Limit(name string) (int64, bool) {
	v, ok := b.Entitlements[name].(float64)
	return int64(v), ok
}

// PlanKey is the key of the plan in force, "" when there is none.
func (b Billing) PlanKey() string {
	if b.Plan == nil {
		return ""
	}
	return b.Plan.Key
}
