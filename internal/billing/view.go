package billing

import (
	"context"
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

// Entitled reports whether name is true or a number above zero, as Entitlements.Entitled.
func (v BillingView) Entitled(name string) bool { return Grants(v.Entitlements[name]) }

// View loads a user's billing view: their entitlements and this period's usage.
func (s *Service) View(ctx context.Context, userID string) (BillingView, error) {
	if s.answers != nil {
		a, err := s.answer(ctx, userID)
		if err != nil {
			return BillingView{}, err
		}
		return ViewOf(a.position, a.used), nil
	}
	e, err := s.Entitlements(ctx, userID)
	if err != nil {
		return BillingView{}, err
	}
	used, err := s.UsageThisPeriod(ctx, e)
	if err != nil {
		return BillingView{}, err
	}
	return ViewOf(e, used), nil
}

// ViewOf is the view of loaded entitlements and usage counters.
func ViewOf(e Entitlements, used map[string]int64) BillingView {
	v := BillingView{Subscribed: e.Subscribed(), Plan: e.Plan(), Entitlements: e.Effective, Usage: map[string]UsageView{}}
	shown := e.Governing()
	if shown == nil && len(e.Subscriptions) > 0 {
		shown = &e.Subscriptions[0]
	}
	if shown != nil {
		v.Status, v.Provider, v.CurrentPeriodEnd = &shown.Status, &shown.Provider, shown.CurrentPeriodEnd
	}
	for name := range e.Effective {
		if limit, ok := e.Limit(name); ok {
			v.Usage[name] = UsageView{Used: used[name], Limit: limit, PeriodEnd: e.UsagePeriodEnd()}
		}
	}
	return v
}
