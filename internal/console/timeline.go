package console

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/tollgate/tollgate/internal/db/dbq"
)

// timelineEntry is one provider event naming a customer: what it was, what became of it,
// the change it made to its subscription's canonical row, and the outbound deliveries
// that change caused.
type timelineEntry struct {
	dbq.CustomerTimelineRow
	Before, After side
	Deliveries    []dbq.CustomerDeliveriesRow
}

// side is a canonical row's plan, status and period end, as an event found or left it.
type side struct {
	Set                     bool
	Plan, Status, PeriodEnd string
}

// Changed says whether the event changed the row.
func (e timelineEntry) Changed() bool { return e.Before != e.After && e.After.Set }

// timeline is a page of the events naming userID, newest first, and whether more follow.
func (c *Console) timeline(ctx context.Context, userID string, pageNo int) ([]timelineEntry, bool, error) {
	q := dbq.New(c.opts.DB)
	rows, err := q.CustomerTimeline(ctx, dbq.CustomerTimelineParams{
		UserID: sql.NullString{String: userID, Valid: true}, Max: pageSize + 1, Skip: int32((pageNo - 1) * pageSize),
	})
	if err != nil {
		return nil, false, err
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
	return entries, more, nil
}
