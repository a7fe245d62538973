package plans

import (
	"context"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Catalogues keeps the plan catalogue and its price mapping at one plans_version, shared
// by everything that maps prices to plans or answers from plans in one process.
type Catalogues struct {
	current atomic.Pointer[versioned]
}

type versioned struct {
	version   int64
	catalogue billing.Catalogue
}

// At is the catalogue at version, which the caller read with its other rows (0: unknown):
// from memory while that version stands, else read again (and kept). Every event's
// transaction learns the version with its row lock, and an answer's read with its rows, so
// a plans sync reaches the next of either on every instance without a read of the
// catalogue each time.
func (c *Catalogues) At(ctx context.Context, q *dbq.Queries, version int64) (billing.Catalogue, error) {
	if v := c.current.Load(); v != nil && version != 0 && v.version == version {
		return v.catalogue, nil
	}
	catalogue, err := load(ctx, q)
	if err != nil {
		return billing.Catalogue{}, err
	}
	prices, err := q.ListPlanPrices(ctx)
	if err != nil {
		return billing.Catalogue{}, err
	}
	for _, p := range prices {
		key := billing.PriceKey{Provider: p.Provider, ID: p.PriceID}
		catalogue.Prices[key] = p.PlanID
		if p.LastsSeconds.Valid {
			catalogue.Lasts[key] = time.Duration(p.LastsSeconds.Int64) * time.Second
		}
	}
	if version != 0 {
		c.current.Store(&versioned{version: version, catalogue: catalogue})
	}
	return catalogue, nil
}

func load(ctx context.Context, q *dbq.Queries) (billing.Catalogue, error) {
	rows, err := q.PlanCatalogue(ctx)
	if err != nil {
		return billing.Catalogue{}, err
	}
	c := billing.Catalogue{Plans: map[int64]billing.Plan{}, Values: map[int64]map[string]any{}, Prices: map[billing.PriceKey]int64{}, Lasts: map[billing.PriceKey]time.Duration{}}
	for _, r := range rows {
		if c.Values[r.ID] == nil {
			c.Plans[r.ID] = billing.Plan{Key: r.Key, Name: r.Name, ID: r.ID, Tier: r.Tier}
			c.Values[r.ID] = map[string]any{}
		}
		if r.IsDefault && !r.ArchivedAt.Valid {
			c.Default = &billing.Plan{Key: r.Key, Name: r.Name, ID: r.ID, Tier: r.Tier}
		}
		if !r.Entitlement.Valid {
			continue
		}
		value := decodeEntitlementValue(r.Value.String)
		if r.LimitValue.Valid {
			value = r.LimitValue.Int64 // a metered entitlement's limit is its usage_limits row
		}
		c.Values[r.ID][r.Entitlement.String] = value
	}
	return c, nil
}

// decodeEntitlementValue reads a stored value back: a bool or an int64.
func decodeEntitlementValue(raw string) any {
	switch raw {
	case "true":
		return true
	case "false":
		return false
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		if f, ferr := strconv.ParseFloat(raw, 64); ferr == nil && f <= math.MaxInt64 {
			return int64(f)
		}
		return false
	}
	return n
}

// Load reads the catalogue's plans and values, without the price mapping: enough to
// answer from.
func Load(ctx context.Context, q *dbq.Queries) (billing.Catalogue, error) { return load(ctx, q) }

// Subscriptions turns a user's canonical rows, with their plans, into subscriptions.
// mirrored, when WEB_INGESTION=sync_engine (on), are the user's web subscriptions read
// from the mirror: they, not old webhook rows, speak for the web. Newest first.
func Subscriptions(rows []dbq.ListUserSubscriptionsRow, mirrored []billing.Subscription, on bool) []billing.Subscription {
	var subs []billing.Subscription
	for _, r := range rows {
		if on && r.Provider == billing.ProviderWeb {
			continue
		}
		var end *time.Time
		if r.CurrentPeriodEnd.Valid {
			t := r.CurrentPeriodEnd.Time.UTC()
			end = &t
		}
		subs = append(subs, billing.Subscription{
			Provider: r.Provider, Status: r.Status, CurrentPeriodEnd: end, Updated: r.UpdatedAt,
			Plan: billing.Plan{Key: r.PlanKey, Name: r.PlanName, ID: r.PlanID, Tier: r.PlanTier},
		})
	}
	if len(mirrored) > 0 {
		subs = append(subs, mirrored...)
		billing.Newest(subs)
	}
	return subs
}

// WithPlan gives r with its plan's key, name and tier from the catalogue.
func WithPlan(c billing.Catalogue, r dbq.ListUserSubscriptionsRow) dbq.ListUserSubscriptionsRow {
	if p, ok := c.Plans[r.PlanID]; ok {
		r.PlanKey, r.PlanName, r.PlanTier = p.Key, p.Name, p.Tier
	}
	return r
}

// Mirror is where, in sync_engine mode, a web store's subscriptions are read from: the
// store's own sync engine mirrors them into the database (the web store's entry in the
// list of stores makes it).
type Mirror interface {
	Subscriptions(ctx context.Context, q *dbq.Queries, userID string, now time.Time) ([]billing.Subscription, error)
}
