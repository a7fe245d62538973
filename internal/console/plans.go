package console

import (
	"net/http"
	"sort"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbq"
)

type plansData struct {
	// Kept is when the counts of people were worked out, when that was before this request (else zero).
	Kept  time.Time
	Plans []planRow
}

type planRow struct {
	Key, Name         string
	Tier              int32
	Default, Archived bool
	Entitlements      []string
	Prices            []dbq.ListPlanPricesRow
	Subscribers       int64
	ByProvider        map[string]int64
}

// plans is GET /admin/plans: the catalogue as synced, each plan's prices and products,
// entitlements, and how many subscribers it has now.
func (c *Console) plans(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := dbq.New(c.opts.DB)
	plans, err := q.ListPlans(ctx)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	prices, err := q.ListPlanPrices(ctx)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	values, err := q.ListAllPlanEntitlements(ctx)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	current, err := c.currentStanding(ctx)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	subscribed := current.People
	var data plansData
	if current.Kept {
		data.Kept = current.At
	}
	for _, p := range plans {
		row := planRow{Key: p.Key, Name: p.Name, Tier: p.Tier, Default: p.IsDefault, Archived: p.ArchivedAt.Valid, ByProvider: map[string]int64{}}
		for _, pr := range prices {
			if pr.PlanID == p.ID {
				row.Prices = append(row.Prices, pr)
			}
		}
		for _, v := range values {
			if v.PlanID == p.ID {
				row.Entitlements = append(row.Entitlements, v.Name+" = "+v.Value)
			}
		}
		row.Subscribers = subscribed.ByPlan[p.Key]
		for key, n := range subscribed.ByPlanProvider {
			if key.plan == p.Key {
				row.ByProvider[key.provider] = n
			}
		}
		sort.Strings(row.Entitlements)
		data.Plans = append(data.Plans, row)
	}
	c.render(w, r, http.StatusOK, "plans", page{Title: "Plans", Section: "plans", Data: data})
}
