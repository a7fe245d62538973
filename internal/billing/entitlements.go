package billing

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Plan names a plan.
type Plan struct {
	Key  string `json:"key"`
	Name string `json:"name"`
	id   int64
	tier int32
}

// Subscription is one canonical subscription of a user.
type Subscription struct {
	Provider         string
	Status           string
	CurrentPeriodEnd *time.Time
	Plan             Plan
	updated          time.Time
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

// metered reports whether any entitlement in force is a limit, counted by usage.
func (e Entitlements) metered() bool {
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
// period end, else the end of the calendar month in UTC.
func (e Entitlements) UsagePeriodEnd() time.Time {
	if e.governing != nil && e.governing.CurrentPeriodEnd != nil {
		return e.governing.CurrentPeriodEnd.UTC()
	}
	return monthEnd(e.At)
}

// monthEnd is when the calendar month of t ends (UTC): the usage period of a user whom no
// subscription with a period end governs.
func monthEnd(t time.Time) time.Time {
	y, m, _ := t.UTC().Date()
	return time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
}

// Entitlements loads the user's position now. Entitlements combine over every entitling
// subscription (booleans OR, numbers max); with none, the default plan's apply.
func (s *Service) Entitlements(ctx context.Context, userID string) (e Entitlements, err error) {
	if s.answers != nil {
		a, err := s.answer(ctx, userID)
		return a.position, err
	}
	err = s.request(ctx, func(ctx context.Context) error {
		e, err = s.entitlements(ctx, userID)
		return err
	})
	return e, err
}

func (s *Service) entitlements(ctx context.Context, userID string) (Entitlements, error) {
	q := dbq.New(s.db)
	rows, err := q.ListUserSubscriptions(ctx, userID)
	if err != nil {
		return Entitlements{}, err
	}
	mirrored, err := s.mirrored(ctx, q, userID)
	if err != nil {
		return Entitlements{}, err
	}
	plans, err := loadPlanCatalogue(ctx, q)
	if err != nil {
		return Entitlements{}, err
	}
	return positionOf(userID, s.now(), s.subscriptionsOf(rows, mirrored), plans), nil
}

// mirrored is the user's web subscriptions from the mirror in sync_engine mode, else none.
func (s *Service) mirrored(ctx context.Context, q *dbq.Queries, userID string) ([]Subscription, error) {
	if s.mirrorSchema == "" {
		return nil, nil
	}
	return s.mirrorSubscriptions(ctx, q, userID)
}

// subscriptionsOf turns a user's canonical rows, and their mirrored web subscriptions,
// into subscriptions, newest first. In sync_engine mode the mirror, not old webhook rows,
// speaks for the web.
func (s *Service) subscriptionsOf(rows []dbq.ListUserSubscriptionsRow, mirrored []Subscription) []Subscription {
	var subs []Subscription
	for _, r := range rows {
		if s.mirrorSchema != "" && r.Provider == ProviderWeb {
			continue
		}
		subs = append(subs, Subscription{
			Provider: r.Provider, Status: r.Status, CurrentPeriodEnd: timePtr(r.CurrentPeriodEnd),
			Plan: Plan{Key: r.PlanKey, Name: r.PlanName, id: r.PlanID, tier: r.PlanTier}, updated: r.UpdatedAt,
		})
	}
	if len(mirrored) > 0 {
		subs = append(subs, mirrored...)
		slices.SortStableFunc(subs, func(a, b Subscription) int { return b.updated.Compare(a.updated) })
	}
	return subs
}

// planCatalogue is every plan, its entitlement values, and the default plan. Once loaded
// it is only read, so it may be shared.
type planCatalogue struct {
	plans       map[int64]Plan
	values      map[int64]map[string]any
	defaultPlan *Plan
}

// row gives r with its plan's key, name and tier.
func (c planCatalogue) row(r dbq.ListUserSubscriptionsRow) dbq.ListUserSubscriptionsRow {
	if p, ok := c.plans[r.PlanID]; ok {
		r.PlanKey, r.PlanName, r.PlanTier = p.Key, p.Name, p.tier
	}
	return r
}

func loadPlanCatalogue(ctx context.Context, q *dbq.Queries) (planCatalogue, error) {
	rows, err := q.PlanCatalogue(ctx)
	if err != nil {
		return planCatalogue{}, err
	}
	c := planCatalogue{plans: map[int64]Plan{}, values: map[int64]map[string]any{}}
	for _, r := range rows {
		if c.values[r.ID] == nil {
			c.plans[r.ID] = Plan{Key: r.Key, Name: r.Name, id: r.ID, tier: r.Tier}
			c.values[r.ID] = map[string]any{}
		}
		if r.IsDefault && !r.ArchivedAt.Valid {
			c.defaultPlan = &Plan{Key: r.Key, Name: r.Name, id: r.ID, tier: r.Tier}
		}
		if !r.Entitlement.Valid {
			continue
		}
		value := decodeEntitlementValue(r.Value.String)
		if r.LimitValue.Valid {
			value = r.LimitValue.Int64 // a metered entitlement's limit is its usage_limits row
		}
		c.values[r.ID][r.Entitlement.String] = value
	}
	return c, nil
}

// positionOf is a user's position at t from their subscriptions, newest first.
// Entitlements combine over every entitling subscription (booleans OR, numbers max); with
// none, the default plan's apply.
func positionOf(userID string, at time.Time, subs []Subscription, plans planCatalogue) Entitlements {
	e := Entitlements{UserID: userID, At: at, Subscriptions: subs, Effective: map[string]any{}}
	var entitling []Plan
	for _, sub := range subs {
		if !sub.Entitling(at) {
			continue
		}
		entitling = append(entitling, sub.Plan)
		if e.governing == nil || sub.Plan.tier > e.governing.Plan.tier {
			g := sub
			e.governing = &g
		}
	}
	if e.governing != nil {
		e.plan = &e.governing.Plan
	} else if plans.defaultPlan != nil {
		e.plan = plans.defaultPlan
		entitling = append(entitling, *e.plan)
	}
	seen := map[int64]bool{}
	for _, p := range entitling {
		if seen[p.id] {
			continue
		}
		seen[p.id] = true
		for name, value := range plans.values[p.id] {
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

// Usage is a counter after recording.
type Usage struct {
	Name      string    `json:"name"`
	Used      int64     `json:"used"`
	Limit     int64     `json:"limit"`
	Remaining int64     `json:"remaining"`
	PeriodEnd time.Time `json:"period_end"`
}

var (
	// ErrNotEntitled: the user's plan has no limit of that name.
	ErrNotEntitled = errors.New("not entitled")
	// ErrLimitExceeded: the amount would take the counter past the limit; nothing changed.
	ErrLimitExceeded = errors.New("limit exceeded")
	// ErrInvalidAmount: amounts are whole numbers above zero.
	ErrInvalidAmount = errors.New("amount must be at least 1")
)

// RecordUsage adds amount to the user's counter for name in the current period, refusing
// without change when that would pass the limit. Concurrent callers never overshoot: the
// check and the add are one conditional upsert.
func (s *Service) RecordUsage(ctx context.Context, userID, name string, amount int64) (u Usage, err error) {
	err = s.request(ctx, func(ctx context.Context) error {
		u, err = s.recordUsage(ctx, userID, name, amount)
		return err
	})
	return u, err
}

func (s *Service) recordUsage(ctx context.Context, userID, name string, amount int64) (Usage, error) {
	if amount < 1 {
		return Usage{}, ErrInvalidAmount
	}
	e, err := s.entitlements(ctx, userID)
	if err != nil {
		return Usage{}, err
	}
	limit, ok := e.Limit(name)
	if !ok || limit <= 0 {
		return Usage{}, ErrNotEntitled
	}
	u := Usage{Name: name, Limit: limit, PeriodEnd: e.UsagePeriodEnd()}
	if amount > limit {
		return u, ErrLimitExceeded
	}
	used, err := dbq.New(s.db).AddUsage(ctx, dbq.AddUsageParams{
		UserID: userID, Name: name, PeriodEnd: u.PeriodEnd, Amount: amount, MaxUsed: limit, Now: s.now(),
	})
	if errors.Is(err, sql.ErrNoRows) {
		return u, ErrLimitExceeded
	}
	if err != nil {
		return u, err
	}
	s.answers.forget(userID) // the next answer shows the new count
	u.Used, u.Remaining = used, limit-used
	return u, nil
}

// UsageThisPeriod is every counter of the user in the current period, by name.
func (s *Service) UsageThisPeriod(ctx context.Context, e Entitlements) (map[string]int64, error) {
	var used map[string]int64
	err := s.request(ctx, func(ctx context.Context) error {
		rows, err := dbq.New(s.db).ListUsage(ctx, dbq.ListUsageParams{UserID: e.UserID, PeriodEnd: e.UsagePeriodEnd()})
		if err != nil {
			return err
		}
		used = make(map[string]int64, len(rows))
		for _, r := range rows {
			used[r.Name] = r.Used
		}
		return nil
	})
	return used, err
}
