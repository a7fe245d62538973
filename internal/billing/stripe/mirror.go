package stripe

import (
	"encoding/json"
	"time"
)

// Mirrored is a subscription as the provider's sync engine mirrors it into Postgres: the
// columns tollgate reads, and its items either as rows (Prices, ItemPeriodEnd) or, when
// the mirror has no item rows, as the JSON it keeps on the subscription.
type Mirrored struct {
	ID, Status                                                string
	CancelAtPeriodEnd                                         bool
	CancelAt, CanceledAt, EndedAt, CurrentPeriodEnd, TrialEnd *int64
	Created                                                   int64
	Prices                                                    []string
	ItemPeriodEnd                                             *int64
	ItemsJSON                                                 string
	HasItemRows                                               bool
}

// MirrorFacts maps a mirrored subscription, as synced at at, the way a webhook's snapshot
// is mapped: its canonical status, access horizon and prices.
func MirrorFacts(m Mirrored, at time.Time) (status string, end *time.Time, prices []string, err error) {
	sub := subscription{
		ID: m.ID, Status: m.Status, CancelAtPeriodEnd: m.CancelAtPeriodEnd, CancelAt: m.CancelAt, CanceledAt: m.CanceledAt,
		EndedAt: m.EndedAt, CurrentPeriodEnd: m.CurrentPeriodEnd, TrialEnd: m.TrialEnd, Created: m.Created, StartDate: m.Created,
	}
	if m.HasItemRows {
		// Item rows are authoritative: removed items are marked deleted there.
		for _, price := range m.Prices {
			if price != "" {
				it := item{CurrentPeriodEnd: m.ItemPeriodEnd}
				it.Price.ID = price
				sub.Items.Data = append(sub.Items.Data, it)
			}
		}
	} else if m.ItemsJSON != "" {
		// Newer API versions also carry the items, with their period ends, as JSON.
		json.Unmarshal([]byte(m.ItemsJSON), &sub.Items)
	}
	status, end, err = canonical(sub, at, nil, nil)
	return status, end, sub.priceIDs(), err
}
