package tollgate

import (
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// Entitlements is a user's billing position at one instant, as [App.Entitlements] reads it:
// the same answer /api/v1/me, the account page and the service API give. Entitlements
// combine over every entitling subscription (booleans OR, numbers max); with none, the
// default plan's apply.
type Entitlements struct {
	UserID string
	// At is the instant the position holds for.
	At time.Time
	// Subscriptions are the user's canonical subscriptions from every store, newest first,
	// entitling or not.
	Subscriptions []Subscription
	// Effective holds the entitlement values in force by name: true or false, or an int64
	// limit for a metered entitlement.
	Effective map[string]any

	plan      *Plan
	governing *Subscription
}

// Plan names a plan of the plans file.
type Plan struct {
	Key  string `json:"key"`
	Name string `json:"name"`
}

// Subscription is one canonical subscription, whichever store sold it.
type Subscription struct {
	// Provider is the store: "web" or "mobile".
	Provider string
	// Status is one of active, trialing, past_due, cancelled, expired or refunded.
	Status string
	// CurrentPeriodEnd is when access ends unless renewed; nil for none (lifetime).
	CurrentPeriodEnd *time.Time
	Plan             Plan
}

// Usage is a metered counter after [App.RecordUsage].
type Usage struct {
	Name      string    `json:"name"`
	Used      int64     `json:"used"`
	Limit     int64     `json:"limit"`
	Remaining int64     `json:"remaining"`
	PeriodEnd time.Time `json:"period_end"`
}

// Subscribed reports whether a subscription entitles the user now.
func (e Entitlements) Subscribed() bool { return e.governing != nil }

// Plan is the highest-tier plan among entitling subscriptions, else the default plan,
// else nil.
func (e Entitlements) Plan() *Plan { return e.plan }

// Governing is the entitling subscription that sells Plan, or nil.
func (e Entitlements) Governing() *Subscription { return e.governing }

// Entitled reports whether the entitlement name is true, or a limit above zero.
func (e Entitlements) Entitled(name string) bool { return billing.Grants(e.Effective[name]) }

// Limit is the limit of the metered entitlement name, if the plan has one.
func (e Entitlements) Limit(name string) (int64, bool) {
	v, ok := e.Effective[name].(int64)
	return v, ok
}

// Entitling reports whether the subscription grants its plan at t: a live status (active,
// trialing, past_due, or cancelled until its period ends) and a period end that is absent
// or still ahead.
func (s Subscription) Entitling(t time.Time) bool { return s.internal().Entitling(t) }

func (s Subscription) internal() billing.Subscription {
	return billing.Subscription{Provider: s.Provider, Status: s.Status, CurrentPeriodEnd: s.CurrentPeriodEnd}
}

func entitlementsOf(b billing.Entitlements) Entitlements {
	e := Entitlements{UserID: b.UserID, At: b.At, Effective: b.Effective}
	for _, s := range b.Subscriptions {
		e.Subscriptions = append(e.Subscriptions, subscriptionOf(s))
	}
	if p := b.Plan(); p != nil {
		e.plan = &Plan{Key: p.Key, Name: p.Name}
	}
	if g := b.Governing(); g != nil {
		s := subscriptionOf(*g)
		e.governing = &s
	}
	return e
}

func subscriptionOf(s billing.Subscription) Subscription {
	return Subscription{Provider: s.Provider, Status: s.Status, CurrentPeriodEnd: s.CurrentPeriodEnd,
		Plan: Plan{Key: s.Plan.Key, Name: s.Plan.Name}}
}
