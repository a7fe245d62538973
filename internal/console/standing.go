package console

import (
	"context"
	"database/sql"
	"math"
	"sort"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// standing is how subscriptions stand at one instant, by provider, plan and currency:
// what the overview shows now and what the daily snapshot keeps.
type standing []standingRow

type standingRow struct {
	Provider, Plan, Currency string // Currency "" for subscriptions without a known price
	// Subscribers are the people with an entitling subscription here: one person with two
	// such subscriptions counts once.
	Subscribers int64
	// Unpriced are entitling, paying (non-trial) subscriptions whose amount or billing
	// period tollgate was not told: counted as subscribers, not money.
	Unpriced int64
	// MRR is the monthly revenue of the priced paying ones, in Currency's minor unit.
	MRR int64
}

// standingAt works out the standing at now from every canonical subscription. MRR counts
// entitling, non-trial subscriptions (a grant pays nothing, and is not unpriced either): amount × quantity per billing period, brought to a
// month (yearly / 12, weekly × 52 / 12), per currency, never converted.
func standingAt(subs []dbq.ConsoleSubscriptionsRow, now time.Time) standing {
	type key struct{ provider, plan, currency string }
	rows := map[key]*standingRow{}
	people := map[key]map[string]bool{}
	mrr := map[key]float64{}
	for _, s := range subs {
		if !entitling(s, now) {
			continue
		}
		monthly, priced := billing.Monthly(s.Amount.Int64, s.BillingPeriod.String)
		priced = priced && s.Amount.Valid && s.Currency.Valid
		k := key{s.Provider, s.PlanKey, ""}
		if priced {
			k.currency = s.Currency.String
		}
		r := rows[k]
		if r == nil {
			r = &standingRow{Provider: k.provider, Plan: k.plan, Currency: k.currency}
			rows[k], people[k] = r, map[string]bool{}
		}
		if !people[k][s.UserID] {
			people[k][s.UserID] = true
			r.Subscribers++
		}
		switch {
		case s.Status == billing.StatusTrialing, s.Provider == billing.ProviderGrant: // entitled, paying nothing
		case priced:
			mrr[k] += monthly
		default:
			r.Unpriced++
		}
	}
	out := make(standing, 0, len(rows))
	for k, r := range rows {
		r.MRR = int64(math.Round(mrr[k]))
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Provider != b.Provider {
			return a.Provider < b.Provider
		}
		if a.Plan != b.Plan {
			return a.Plan < b.Plan
		}
		return a.Currency < b.Currency
	})
	return out
}

// countPeople counts the people with an entitling subscription at now under each key the
// subscriptions give: a person with two subscriptions under one key counts once there.
func countPeople[K comparable](subs []dbq.ConsoleSubscriptionsRow, now time.Time, key func(dbq.ConsoleSubscriptionsRow) K) map[K]int64 {
	type person struct {
		key  K
		user string
	}
	seen, counts := map[person]bool{}, map[K]int64{}
	for _, s := range subs {
		p := person{key(s), s.UserID}
		if entitling(s, now) && !seen[p] {
			seen[p] = true
			counts[p.key]++
		}
	}
	return counts
}

// entitling says whether the subscription entitles its user at now.
func entitling(s dbq.ConsoleSubscriptionsRow, now time.Time) bool {
	sub := billing.Subscription{Status: s.Status}
	if s.CurrentPeriodEnd.Valid {
		end := s.CurrentPeriodEnd.Time
		sub.CurrentPeriodEnd = &end
	}
	return sub.Entitling(now)
}

// people are the subscribers now, counted as people: a person with subscriptions at two
// providers counts once under each, and once in the total; so with plans.
type people struct {
	ByProvider, ByPlan map[string]int64
	ByPlanProvider     map[planProvider]int64
	Total              int64
}

type planProvider struct{ plan, provider string }

// snapshot keeps today's standing in billing_days, replacing what an earlier snapshot of
// today kept: history the charts cannot derive later.
func (c *Console) snapshot(ctx context.Context, s standing) error {
	day := c.now().Truncate(24 * time.Hour)
	return c.opts.DB.InTx(ctx, func(tx *sql.Tx) error {
		q := dbq.New(tx)
		if err := q.DeleteBillingDay(ctx, day); err != nil {
			return err
		}
		for _, r := range s {
			if err := q.InsertBillingDay(ctx, dbq.InsertBillingDayParams{
				Day: day, Provider: r.Provider, PlanKey: r.Plan, Currency: r.Currency,
				Subscribers: r.Subscribers, Unpriced: r.Unpriced, MrrMinor: r.MRR,
			}); err != nil {
				return err
			}
		}
		return nil
	})
}

// RunSnapshots keeps today's standing every interval until ctx ends, so that the charts
// have a point for every day the server ran, whether or not an operator looked. When
// working the standing out is slow, it also works it out every standingRefresh, so that
// the pages always find a fresh one kept.
func (c *Console) RunSnapshots(ctx context.Context, interval time.Duration) {
	var snapped time.Time
	for {
		s, err := c.workOutStanding(ctx)
		if err == nil && time.Since(snapped) >= interval {
			if err = c.snapshot(ctx, s.Rows); err == nil {
				snapped = time.Now()
			}
		}
		if err != nil && ctx.Err() == nil {
			c.opts.Log.WarnContext(ctx, "console: today's standing not kept", "error", err)
		}
		wait := interval
		if c.kept.slow() {
			wait = min(interval, standingRefresh)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}
