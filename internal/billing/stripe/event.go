package stripe

// The web provider's events and objects, as tollgate reads them.

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// envelope reads a web event's id and type: its top-level id and type.
func envelope(top map[string]json.RawMessage) (billing.Event, error) {
	id, err := billing.EventID(top, "id")
	return billing.Event{ID: id, Type: billing.Text(top["type"])}, err
}

// decodeWebEvent reads a web body in one pass into its envelope and its event, so that the
// processor does not parse it again. The envelope is checked as envelope checks it from
// billing.DecodeTop. A nil event says the body needs the general path: billing.DecodeTop to say what is
// wrong with it, or a store-then-refuse by the processor (a field of the wrong kind). Keys
// match as the processor has always matched them, ignoring case: a body whose id is keyed
// "ID" is read so, where the general path refused it for want of an "id".
func decodeWebEvent(body []byte) (billing.Event, *webEvent, error) {
	if b := bytes.TrimSpace(body); len(b) == 0 || b[0] != '{' {
		return billing.Event{}, nil, nil
	}
	var wire struct {
		ID      json.RawMessage `json:"id"`
		Type    json.RawMessage `json:"type"`
		Created json.RawMessage `json:"created"`
		Data    webEventData    `json:"data"`
	}
	if json.Unmarshal(body, &wire) != nil {
		return billing.Event{}, nil, nil
	}
	top := map[string]json.RawMessage{}
	if wire.ID != nil {
		top["id"] = wire.ID
	}
	if wire.Type != nil {
		top["type"] = wire.Type
	}
	env, err := envelope(top)
	if err != nil {
		return env, nil, err
	}
	ev := &webEvent{ID: env.ID, Type: env.Type, Data: wire.Data}
	if (wire.Created != nil && json.Unmarshal(wire.Created, &ev.Created) != nil) || !isJSONString(wire.Type) {
		return env, nil, nil
	}
	return env, ev, nil
}

// isJSONString says whether a field is absent, null or a JSON string, as webEvent's Type takes.
func isJSONString(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || raw[0] == '"' || bytes.Equal(raw, []byte("null"))
}

// webEvent is the envelope of a web provider event.
type webEvent struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Created int64        `json:"created"`
	Data    webEventData `json:"data"`
}

// webEventData is a web event's data: the object it is about and, for an update, the
// previous values of the attributes that changed.
type webEventData struct {
	Object             json.RawMessage            `json:"object"`
	PreviousAttributes map[string]json.RawMessage `json:"previous_attributes"`
}

// flexID is a reference the web provider sends either as an id string or as the expanded
// object with an "id".
type flexID string

func (f *flexID) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*f = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*f = flexID(s)
		return nil
	}
	var obj struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return errors.New("want an id string or an object with an id")
	}
	*f = flexID(obj.ID)
	return nil
}

// subscription holds the fields of a web subscription object tollgate uses. Period
// ends moved from the subscription to its items in API version 2025-03-31; both are read.
type subscription struct {
	ID                string         `json:"id"`
	Customer          flexID         `json:"customer"`
	Status            string         `json:"status"`
	CancelAtPeriodEnd bool           `json:"cancel_at_period_end"`
	CancelAt          *int64         `json:"cancel_at"`
	CanceledAt        *int64         `json:"canceled_at"`
	EndedAt           *int64         `json:"ended_at"`
	TrialEnd          *int64         `json:"trial_end"`
	StartDate         int64          `json:"start_date"`
	Created           int64          `json:"created"`
	CurrentPeriodEnd  *int64         `json:"current_period_end"`
	Metadata          map[string]any `json:"metadata"`
	Items             struct {
		Data []item `json:"data"`
	} `json:"items"`
}

// item is one item of a web subscription: its price and, in newer API versions, its
// period end.
type item struct {
	Price struct {
		ID         string `json:"id"`
		UnitAmount *int64 `json:"unit_amount"`
		Currency   string `json:"currency"`
		Recurring  *struct {
			Interval      string `json:"interval"`
			IntervalCount int64  `json:"interval_count"`
		} `json:"recurring"`
	} `json:"price"`
	Quantity         *int64 `json:"quantity"`
	CurrentPeriodEnd *int64 `json:"current_period_end"`
}

func decodeWebSubscription(raw json.RawMessage) (subscription, error) {
	var sub subscription
	if err := json.Unmarshal(raw, &sub); err != nil {
		return sub, billing.Invalidf("subscription object: %v", billing.JSONProblem(err))
	}
	if sub.ID == "" {
		return sub, billing.Invalidf("subscription object has no id")
	}
	if sub.Status == "" {
		return sub, billing.Invalidf("subscription %s has no status", sub.ID)
	}
	return sub, nil
}

// periodEnd is the latest period end over the items, or the subscription's own (older API).
func (s subscription) periodEnd() *time.Time {
	var end int64
	if s.CurrentPeriodEnd != nil {
		end = *s.CurrentPeriodEnd
	}
	for _, item := range s.Items.Data {
		if item.CurrentPeriodEnd != nil && *item.CurrentPeriodEnd > end {
			end = *item.CurrentPeriodEnd
		}
	}
	if end == 0 {
		return nil
	}
	return billing.UnixTime(end)
}

func (s subscription) userID() string {
	v, _ := s.Metadata["user_id"].(string)
	return v
}

// amount is what the subscription bills per period, in the currency's minor unit (the
// price's unit_amount is already in it, zero-decimal currencies included): each item's
// unit amount times its quantity, and that period as an ISO 8601 duration. The currency
// is "" when the items do not say, or do not agree; the period "" when they do not.
func (s subscription) amount() (int64, string, string) {
	var total int64
	currency, period := "", ""
	for i, item := range s.Items.Data {
		if item.Price.UnitAmount == nil {
			return 0, "", ""
		}
		quantity := int64(1)
		if item.Quantity != nil {
			quantity = *item.Quantity
		}
		total += *item.Price.UnitAmount * quantity
		if i > 0 && item.Price.Currency != currency {
			return 0, "", ""
		}
		currency = item.Price.Currency
		switch p := item.period(); {
		case i == 0:
			period = p
		case p != period:
			period = "" // items billed on different periods: no one period
		}
	}
	return total, currency, period
}

// period is the item's price's billing interval as an ISO 8601 duration ("P1M").
func (i item) period() string {
	r := i.Price.Recurring
	unit := map[string]string{"day": "D", "week": "W", "month": "M", "year": "Y"}
	if r == nil || unit[r.Interval] == "" {
		return ""
	}
	return "P" + strconv.FormatInt(max(r.IntervalCount, 1), 10) + unit[r.Interval]
}

func (s subscription) priceIDs() []string {
	var ids []string
	for _, item := range s.Items.Data {
		if item.Price.ID != "" {
			ids = append(ids, item.Price.ID)
		}
	}
	return ids
}

// webInvoice holds the fields of a paid invoice tollgate uses, in both API shapes. The
// subscription's metadata is copied onto the invoice (subscription_details) and its lines.
type webInvoice struct {
	ID                  string             `json:"id"`
	Customer            flexID             `json:"customer"`
	Subscription        flexID             `json:"subscription"`
	SubscriptionDetails webInvoiceMetadata `json:"subscription_details"`
	Parent              struct {
		SubscriptionDetails struct {
			Subscription flexID `json:"subscription"`
			webInvoiceMetadata
		} `json:"subscription_details"`
	} `json:"parent"`
	Lines struct {
		Data []struct {
			Period struct {
				End int64 `json:"end"`
			} `json:"period"`
			Price   struct{ ID string } `json:"price"`
			Pricing struct {
				PriceDetails struct {
					Price flexID `json:"price"`
				} `json:"price_details"`
			} `json:"pricing"`
			webInvoiceMetadata
		} `json:"data"`
	} `json:"lines"`
}

type webInvoiceMetadata struct {
	Metadata map[string]any `json:"metadata"`
}

func (m webInvoiceMetadata) userID() string {
	v, _ := m.Metadata["user_id"].(string)
	return v
}

func decodeWebInvoice(raw json.RawMessage) (webInvoice, error) {
	var inv webInvoice
	if err := json.Unmarshal(raw, &inv); err != nil {
		return inv, billing.Invalidf("invoice object: %v", billing.JSONProblem(err))
	}
	return inv, nil
}

func (inv webInvoice) subscriptionID() string {
	if id := inv.Parent.SubscriptionDetails.Subscription; id != "" {
		return string(id)
	}
	return string(inv.Subscription)
}

// userID is the identity user id the subscription carried in its metadata, as the
// invoice repeats it.
func (inv webInvoice) userID() string {
	candidates := []string{inv.Parent.SubscriptionDetails.userID(), inv.SubscriptionDetails.userID()}
	for _, line := range inv.Lines.Data {
		candidates = append(candidates, line.userID())
	}
	for _, id := range candidates {
		if id != "" {
			return id
		}
	}
	return ""
}

// priceIDs are the prices the invoice's lines bill, in both API shapes.
func (inv webInvoice) priceIDs() []string {
	var ids []string
	for _, line := range inv.Lines.Data {
		if id := string(line.Pricing.PriceDetails.Price); id != "" {
			ids = append(ids, id)
		} else if line.Price.ID != "" {
			ids = append(ids, line.Price.ID)
		}
	}
	return ids
}

// paidThrough is the latest period end over the invoice's lines.
func (inv webInvoice) paidThrough() *time.Time {
	var end int64
	for _, line := range inv.Lines.Data {
		end = max(end, line.Period.End)
	}
	if end == 0 {
		return nil
	}
	return billing.UnixTime(end)
}
