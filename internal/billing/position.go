package billing

import (
	"slices"
	"time"
)

// Plan names a plan. ID and Tier are the catalogue's: the higher tier is the better plan.
type Plan struct {
	Key  string `json:"key"`
	Name string `json:"name"`
	ID   int64  `json:"-"`
	Tier int32  `json:"-"`
}

// Subscription is one canonical subscription of a user.
type Subscription struct {
	Provider         string
	Status           string
	CurrentPeriodEnd *time.Time
	Plan             Plan
	// Updated is when its row was last written: what "newest" means.
	Updated time.Time
}

// Entitling reports whether the subscription grants its plan at t: a live status and an
// access horizon that is absent or still ahead (docs/billing.md, "Status mapping").
func (s Subscription) Entitling(t time.Time) bool {
	switch s.Status {
	case StatusActive, StatusTrialing, StatusPastDue, StatusCancelled:
		return s.CurrentPeriodEnd == nil || s.CurrentPeriodEnd.After(t)
	}
	return false
}

// Entitlements is a user's billing position at one instant. Every question about a user's
// plan, entitlements and limits is answered from this one value, so the API, the account
// page and user-written handlers agree.
type Entitlements struct {
	UserID string
	At     time.Time
	// Subscriptions are newest first.
	Subscriptions []Subscription
	// Effective holds the entitlement values in force: true/false or an int64 limit.
	Effective map[string]any
	plan      *Plan
	governing *Subscription // the entitling subscription that sells plan
}

// Subscribed reports whether the user has an entitling subscription.
func (e Entitlements) Subscribed() bool { return e.governing != nil }

// Plan is the highest-tier plan among entitling subscriptions, else the default plan, else nil.
func (e Entitlements) Plan() *Plan { return e.plan }

// Governing is the entitling subscription that sells Plan, or nil.
func (e Entitlements) Governing() *Subscription { return e.governing }

// Entitled reports whether name is true or a number above zero.
func (e Entitlements) Entitled(name string) bool { return Grants(e.Effective[name]) }

// Grants reports whether an entitlement's value grants it: true, or a limit above zero.
func Grants(value any) bool {
	switch v := value.(type) {
	case bool:
		return v
	case int64:
		return v > 0
	}
	return false
}

// Metered reports whether any entitlement in force is a limit, counted by usage.
func (e Entitlements) Metered() bool {
	for _, v := range e.Effective {
		if _, ok := v.(int64); ok {
			return true
		}
	}
	return false
}

// Limit is the numeric value of name, if it has one.
func (e Entitlements) Limit(name string) (int64, bool) {
	v, ok := e.Effective[name].(int64)
	return v, ok
}

// UsagePeriodEnd is when the current usage period ends: the governing subscription's
// period end, else the end of the calendar month in UTC. A grant's end is no billing
// period, so usage under a grant counts by calendar month.
func (e Entitlements) UsagePeriodEnd() time.Time {
	if e.governing != nil && e.governing.CurrentPeriodEnd != nil && e.governing.Provider != ProviderGrant {
		return e.governing.CurrentPeriodEnd.UTC()
	}
	return MonthEnd(e.At)
}

// ManagedInApp says whether a subscription sold in the mobile app entitles the user and
// none from the web does: such a plan is changed in the app's store, not on the web.
// soldInApp says which providers sell in the app (the list of stores knows); a grant is
// sold by neither.
func (e Entitlements) ManagedInApp(soldInApp func(provider string) bool) bool {
	inApp, web := false, false
	for _, sub := range e.Subscriptions {
		if sub.Entitling(e.At) && sub.Provider != ProviderGrant {
			inApp = inApp || soldInApp(sub.Provider)
			web = web || !soldInApp(sub.Provider)
		}
	}
	return inApp && !web
}

// Shown is the status the subscription is shown with at t: its own, except that a grant
// reads expired from its end, whether or not that end has been recorded yet (no event
// announces it, so a sweep records it shortly after).
func (s Subscription) Shown(t time.Time) string {
	if s.Provider == ProviderGrant && !s.Entitling(t) {
		return StatusExpired
	}
	return s.Status
}

// StatusLapsed is no store's status: it is how people are shown a subscription whose store
// last said it was live (active, trialing, or cancelled with time left) once its period
// has ended with no renewal heard — a lost renewal, or an old event sent late. It entitles
// nothing. Past due stays past due: the store said why the period was not renewed, and is
// still trying to collect. /api/v1/me keeps the store's own status (with subscribed
// false); the console, users show and webhook send say lapsed, so that no green "active"
// sits beside a plan the user no longer has.
const StatusLapsed = "lapsed"

// StatusShown is the status people are shown at t for a subscription whose recorded
// status and period end are these: status, or lapsed for a live status whose period has
// ended.
func StatusShown(status string, periodEnd *time.Time, t time.Time) string {
	switch status {
	case StatusActive, StatusTrialing, StatusCancelled:
		if periodEnd != nil && !periodEnd.After(t) {
			return StatusLapsed
		}
	}
	return status
}

// Catalogue is every plan, its entitlement values, the default plan, and which plan each
// provider's price or product sells. Once built it is only read, so it may be shared.
type Catalogue struct {
	Plans   map[int64]Plan
	Values  map[int64]map[string]any
	Default *Plan
	Prices  map[PriceKey]int64
	// Lasts is how long a one-time purchase of a product entitles for, where the plans
	// file says (`lasts`).
	Lasts map[PriceKey]time.Duration
}

// PriceKey is a provider's price (web) or product (mobile) id.
type PriceKey struct{ Provider, ID string }

// PlanByKey is the plan whose key is key.
func (c Catalogue) PlanByKey(key string) (Plan, bool) {
	for _, p := range c.Plans {
		if p.Key == key {
			return p, true
		}
	}
	return Plan{}, false
}

// PlanFor is the highest-tier plan selling any of a provider's price or product ids.
func (c Catalogue) PlanFor(provider string, ids []string) (Plan, bool) {
	var best *Plan
	for _, id := range ids {
		plan, ok := c.Plans[c.Prices[PriceKey{provider, id}]]
		if ok && (best == nil || plan.Tier > best.Tier) {
			best = &plan
		}
	}
	if best == nil {
		return Plan{}, false
	}
	return *best, true
}

// Position is a user's position at t from their subscriptions, newest first.
// Entitlements combine over every entitling subscription (booleans OR, numbers max); with
// none, the default plan's apply.
func Position(userID string, at time.Time, subs []Subscription, plans Catalogue) Entitlements {
	e := Entitlements{UserID: userID, At: at, Subscriptions: subs, Effective: map[string]any{}}
	var entitling []Plan
	for _, sub := range subs {
		if !sub.Entitling(at) {
			continue
		}
		entitling = append(entitling, sub.Plan)
		if e.governing == nil || sub.Plan.Tier > e.governing.Plan.Tier {
			g := sub
			e.governing = &g
		}
	}
	if e.governing != nil {
		e.plan = &e.governing.Plan
	} else if plans.Default != nil {
		e.plan = plans.Default
		entitling = append(entitling, *e.plan)
	}
	seen := map[int64]bool{}
	for _, p := range entitling {
		if seen[p.ID] {
			continue
		}
		seen[p.ID] = true
		for name, value := range plans.Values[p.ID] {
			e.Effective[name] = combine(e.Effective[name], value)
		}
	}
	return e
}

func combine(a, b any) any {
	switch x := a.(type) {
	case bool:
		if y, ok := b.(bool); ok {
			return x || y
		}
	case int64:
		if y, ok := b.(int64); ok {
			return max(x, y)
		}
		return x // a number outranks a boolean for the same name
	}
	return b
}

// Newest sorts subscriptions newest first, keeping the order of equals.
func Newest(subs []Subscription) {
	slices.SortStableFunc(subs, func(a, b Subscription) int { return b.Updated.Compare(a.Updated) })
}

// ChangesAt is the first moment after At at which the answer may change with no event at
// all — the nearest period end ahead among the user's subscriptions (a renewal due, a
// trial's or a grant's end) — or zero when none is ahead. An answer handed out to be held
// (an entitlement token, the access token's claim) is never said to hold past it.
func (e Entitlements) ChangesAt() time.Time {
	var at time.Time
	for _, sub := range e.Subscriptions {
		if end := sub.CurrentPeriodEnd; end != nil && end.After(e.At) && (at.IsZero() || end.Before(at)) {
			at = *end
		}
	}
	return at
}
