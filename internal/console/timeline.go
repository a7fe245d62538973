package console

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"time"

	"github.com/tollgate/tollgate/internal/audit"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// timelineEntry is one provider event naming a customer: what it was, what became of it,
// the change it made to its subscription's canonical row, and the outbound deliveries
// that change caused. Or, with Action set, an action taken by hand that concerned them
// (the audit log), placed among the events by its time.
type timelineEntry struct {
	dbq.CustomerTimelineRow
	Before, After side
	Deliveries    []dbq.CustomerDeliveriesRow
	Action        *audit.Entry
}

// at is when the entry happened: the event received, the action taken.
func (e timelineEntry) at() time.Time {
	if e.Action != nil {
		return e.Action.At
	}
	return e.ReceivedAt
}

// side is a canonical row's plan, status and period end, as an event found or left it.
type side struct {
	Set                     bool
	Plan, Status, PeriodEnd string
}

// Changed says whether the event changed the row.
func (e timelineEntry) Changed() bool { return e.Before != e.After && e.After.Set }

// timeline is a page of the events naming userID, newest first, and whether more follow,
// with the actions that concerned userID among them.
func (c *Console) timeline(ctx context.Context, userID string, pageNo int) ([]timelineEntry, bool, error) {
	q := dbq.New(c.opts.DB)
	// From page 2 on, the previous page's last event is read too: the actions after it
	// belong at the top of this page.
	skip, extra := (pageNo-1)*pageSize, 0
	if skip > 0 {
		skip, extra = skip-1, 1
	}
	rows, err := q.CustomerTimeline(ctx, dbq.CustomerTimelineParams{
		UserID: sql.NullString{String: userID, Valid: true}, Max: int32(pageSize + 1 + extra), Skip: int32(skip),
	})
	if err != nil {
		return nil, false, err
	}
	var until time.Time // the previous page's last event; zero: no end
	if extra == 1 && len(rows) > 0 {
		until, rows = rows[0].ReceivedAt, rows[1:]
	}
	more := len(rows) > pageSize
	rows = rows[:min(len(rows), pageSize)]
	deliveries, err := q.CustomerDeliveries(ctx, userID)
	if err != nil {
		return nil, false, err
	}
	caused := map[string][]dbq.CustomerDeliveriesRow{} // by provider and event id
	for _, d := range deliveries {
		var body struct {
			Data struct {
				Cause struct {
					Provider        string `json:"provider"`
					ProviderEventID string `json:"provider_event_id"`
				} `json:"cause"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(d.Payload), &body) == nil {
			key := body.Data.Cause.Provider + "\x00" + body.Data.Cause.ProviderEventID
			caused[key] = append(caused[key], d)
		}
	}
	entries := make([]timelineEntry, len(rows))
	for i, r := range rows {
		entries[i] = timelineEntry{
			CustomerTimelineRow: r,
			Before:              side{r.StatusBefore.Valid, r.PlanBefore.String, r.StatusBefore.String, dateOf(r.PeriodEndBefore)},
			After:               side{r.StatusAfter.Valid, r.PlanAfter.String, r.StatusAfter.String, dateOf(r.PeriodEndAfter)},
			Deliveries:          caused[r.Provider+"\x00"+r.ProviderEventID],
		}
	}
	var since time.Time // this page's last event, when older ones follow; zero: no start
	if more {
		since = rows[len(rows)-1].ReceivedAt
	}
	actions, err := audit.List(ctx, c.opts.DB, audit.Filter{UserID: userID, Since: since, Until: until, Max: 1000})
	if err != nil {
		return nil, false, err
	}
	for i := range actions {
		entries = append(entries, timelineEntry{Action: &actions[i]})
	}
	slices.SortStableFunc(entries, func(a, b timelineEntry) int { return b.at().Compare(a.at()) })
	return entries, more, nil
}
