package console

import (
	"context"
	"math"
	"net/http"
	"sort"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// chartDays is how far back the overview's charts reach.
const chartDays = 90

type overviewData struct {
	// Kept is when the counts were worked out, when that was before this request (else zero).
	Kept     time.Time
	Now      standing
	Total    int64
	MRR      []money // per currency, now
	Unpriced int64
	Charts   []chart
}

// money is an amount in a currency's major unit.
type money struct {
	Currency string
	Amount   float64
}

// overview is GET /admin: subscribers and MRR now, and the charts of the last 90 days.
func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	current, err := c.currentStanding(ctx)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	now, subscribed := current.Rows, current.People
	data := overviewData{Now: now, Total: subscribed.Total}
	if current.Kept {
		data.Kept = current.At
	}
	mrr := map[string]int64{}
	for _, row := range now {
		data.Unpriced += row.Unpriced
		if row.Currency != "" {
			mrr[row.Currency] += row.MRR
		}
	}
	data.MRR = inMajorUnits(mrr)
	if data.Charts, err = c.charts(ctx, current); err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "overview", page{Title: "Overview", Section: "overview", Data: data})
}

// charts are the overview's daily charts, as current counts them. The levels' past days
// are the daily snapshots; today's point is current's standing.
func (c *Console) charts(ctx context.Context, current standingNow) ([]chart, error) {
	now, subscribed := current.Rows, current.People
	days := lastDays(current.At, chartDays)
	since, _ := time.Parse(time.DateOnly, days[0])
	stored, err := dbq.New(c.opts.DB).ListBillingDays(ctx, since)
	if err != nil {
		return nil, err
	}
	active, mrr := dayCounts{}, dayCounts{}
	today := days[len(days)-1]
	for _, d := range stored {
		if day := d.Day.UTC().Format(time.DateOnly); day != today {
			add(active, day, d.Provider, d.Subscribers)
			if d.Currency != "" {
				add(mrr, day, d.Currency, d.MrrMinor)
			}
		}
	}
	for provider, n := range subscribed.ByProvider {
		add(active, today, provider, n)
	}
	for _, r := range now {
		if r.Currency != "" {
			add(mrr, today, r.Currency, r.MRR)
		}
	}
	providers := c.opts.Stores
	charts := []chart{
		chartOf("active", "Active subscribers by provider (people)", true, days, active, providers, count),
		chartOf("mrr", "MRR by currency", true, days, mrr, nil, majorUnits),
	}
	charts[0].Bars = true // stacked, so that providers with the same count stay apart
	charts[0].Note = "People with an entitling subscription at each provider, as kept each day the server ran (a day without a bar had no snapshot); " +
		"someone subscribed at two providers counts under each, so a day's bar can be taller than the people subscribed."
	charts[1].Note = "Each currency in its own unit; nothing is converted."
	for _, q := range []struct{ name, id, title string }{
		{"new", "new", "New subscriptions"}, {"churned", "churned", "Churned subscriptions (expired or refunded)"},
		{"webhooks", "webhooks", "Webhooks by outcome"}, {"deliveries", "deliveries", "Outbound deliveries"},
	} {
		counts := current.Daily[q.name]
		order := providers
		switch q.name {
		case "webhooks":
			order = []string{billing.OutcomeApplied, billing.OutcomeDuplicate, billing.OutcomeStale, billing.OutcomeIgnored, billing.OutcomeUnresolved, "error"}
		case "deliveries":
			order = []string{"delivered", "retrying", "failed"}
		}
		ch := chartOf(q.id, q.title, false, days, counts, order, count)
		if q.name == "deliveries" && c.opts.Wake == nil && len(ch.Series) == 0 {
			ch.Off = "Off: outbound webhooks are not set up (OUTBOUND_WEBHOOK_URL and OUTBOUND_WEBHOOK_SECRET)."
		}
		charts = append(charts, ch)
	}
	return charts, nil
}

func add(counts dayCounts, day, key string, n int64) {
	if counts[day] == nil {
		counts[day] = map[string]int64{}
	}
	counts[day][key] += n
}

// majorUnits scales a currency's minor units to its major unit.
func majorUnits(currency string, minor int64) float64 {
	return float64(minor) / math.Pow10(billing.Decimals(currency))
}

// inMajorUnits lists amounts in minor units by currency as money, by currency.
func inMajorUnits(minor map[string]int64) []money {
	var out []money
	for cur, v := range minor {
		out = append(out, money{Currency: cur, Amount: majorUnits(cur, v)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Currency < out[j].Currency })
	return out
}
