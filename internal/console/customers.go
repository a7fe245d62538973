package console

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// pageSize is how many rows a table shows at a time.
const pageSize = 50

type customersData struct {
	Query   string
	Results []customerResult
}

type customerResult struct {
	UserID, Email          string
	Plan, Status, Provider string
}

// customers is GET /admin/customers?q=: a search by e-mail (its start), user id, or a
// provider's customer, subscription or event id; without q, the customers seen last.
func (c *Console) customers(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	data := customersData{Query: q}
	users, err := c.search(r.Context(), q)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	for _, id := range users {
		res, err := c.resultFor(r.Context(), id)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		data.Results = append(data.Results, res)
	}
	c.render(w, r, http.StatusOK, "customers", page{Title: "Customers", Section: "customers", Data: data})
}

// search gives the ids of the users q finds, at most 50: a user id is that user; anything
// else finds the e-mail addresses it starts and, unless it holds an @ (which no provider
// id does), the provider ids it is, in that order. An empty q gives the users seen last.
func (c *Console) search(ctx context.Context, q string) ([]string, error) {
	queries := dbq.New(c.opts.DB)
	switch {
	case q == "":
		return queries.RecentCustomers(ctx)
	case billing.IsUUID(strings.ToLower(q)):
		return []string{strings.ToLower(q)}, nil
	}
	byEmail, err := queries.SearchKnownUsers(ctx, likePrefix(strings.ToLower(q)))
	if err != nil {
		return nil, err
	}
	var byID []string
	if !strings.Contains(q, "@") {
		for _, provider := range c.providers() {
			found, err := queries.UsersByProviderID(ctx, dbq.UsersByProviderIDParams{Provider: provider, ID: sql.NullString{String: q, Valid: true}})
			if err != nil {
				return nil, err
			}
			byID = append(byID, found...)
		}
	}
	var ids []string
	for _, r := range byEmail {
		ids = append(ids, r.UserID)
	}
	for _, id := range byID {
		if !slices.Contains(ids, id) && len(ids) < pageSize {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// likePrefix is a LIKE pattern for what starts with s, its wildcards escaped.
func likePrefix(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s) + "%"
}

// resultFor is a search result: the user's e-mail, if seen, and newest subscription.
func (c *Console) resultFor(ctx context.Context, userID string) (customerResult, error) {
	res := customerResult{UserID: userID}
	known, err := dbq.New(c.opts.DB).GetKnownUser(ctx, userID)
	switch {
	case err == nil:
		res.Email = known.Email
	case !errors.Is(err, sql.ErrNoRows):
		return res, err
	}
	view, err := c.opts.Billing.View(ctx, userID)
	if err != nil {
		return res, err
	}
	if view.Plan != nil {
		res.Plan = view.Plan.Name
	}
	res.Status = view.StatusShown(c.now())
	if view.Provider != nil {
		res.Provider = *view.Provider
	}
	return res, nil
}

type customerData struct {
	UserID, Email string
	View          billing.BillingView
	Status        string // the view's, as people are shown it (lapsed once ended unrenewed)
	ViewJSON      string
	Subscriptions []subscriptionRow
	Grants        []grantRow
	Grant         grantForm
	Timeline      []timelineEntry
	Page          int
	More          bool
}

type subscriptionRow struct {
	dbq.CustomerSubscriptionsRow
	Shown     string // its status as people are shown it (billing.StatusShown)
	Price     string
	Dashboard string
}

// customer is GET /admin/customers/{user_id}: the billing answer /api/v1/me gives, each
// provider subscription, the grants, and the timeline of the events that name the user.
func (c *Console) customer(w http.ResponseWriter, r *http.Request) {
	userID := strings.ToLower(r.PathValue("user_id"))
	if !billing.IsUUID(userID) {
		c.fail(w, r, errNoSuchThing)
		return
	}
	data, err := c.customerPage(r.Context(), userID, pageNumber(r), grantForm{For: "30d"})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "customer", page{Title: "Customer", Section: "customers", Data: data})
}

// customerPage is what the customer page shows of userID, with the timeline's page pageNo
// and the grant form as form fills it.
func (c *Console) customerPage(ctx context.Context, userID string, pageNo int, form grantForm) (customerData, error) {
	data := customerData{UserID: userID, Page: pageNo, Grant: form}
	if known, err := dbq.New(c.opts.DB).GetKnownUser(ctx, userID); err == nil {
		data.Email = known.Email
	}
	var err error
	if data.View, err = c.opts.Billing.View(ctx, userID); err != nil {
		return data, err
	}
	now := c.now()
	data.Status = data.View.StatusShown(now)
	pretty, _ := json.MarshalIndent(data.View, "", "  ")
	data.ViewJSON = string(pretty)
	subs, err := dbq.New(c.opts.DB).CustomerSubscriptions(ctx, userID)
	if err != nil {
		return data, err
	}
	for _, s := range subs {
		var end *time.Time
		if s.CurrentPeriodEnd.Valid {
			end = &s.CurrentPeriodEnd.Time
		}
		shown := billing.StatusShown(s.Status, end, now)
		data.Subscriptions = append(data.Subscriptions, subscriptionRow{s, shown, priceText(s.Amount, s.Currency, s.BillingPeriod), c.opts.Dashboard(s.Provider, s.ProviderSubscriptionID)})
	}
	if data.Grants, data.Grant.Plans, err = c.grantsOf(ctx, userID); err != nil {
		return data, err
	}
	data.Timeline, data.More, err = c.timeline(ctx, userID, pageNo)
	return data, err
}

// pageNumber is the ?page= of a paged table, from 1.
func pageNumber(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 1 || n > 1_000_000 {
		return 1
	}
	return n
}

// priceText writes a price per period ("9.99 usd / P1M"), or "" when unknown.
func priceText(amount sql.NullInt64, currency, period sql.NullString) string {
	if !amount.Valid || !currency.Valid {
		return ""
	}
	text := strconv.FormatFloat(majorUnits(currency.String, amount.Int64), 'f', billing.Decimals(currency.String), 64) + " " + strings.ToUpper(currency.String)
	if p := periodNames[period.String]; p != "" {
		return text + " / " + p
	}
	return text + " / unknown period"
}

var periodNames = map[string]string{"P1D": "day", "P1W": "week", "P1M": "month", "P3M": "3 months", "P6M": "6 months", "P1Y": "year"}

func dateOf(t sql.NullTime) string {
	if !t.Valid {
		return ""
	}
	return t.Time.UTC().Format(time.DateOnly)
}
