package paddle

import (
	"encoding/json"
	"strconv"
	"time"
)

// envelope is a notification as Paddle sends it: its event, when it occurred, and the
// entity it is about.
type envelope struct {
	EventID    string          `json:"event_id"`
	EventType  string          `json:"event_type"`
	OccurredAt time.Time       `json:"occurred_at"`
	Data       json.RawMessage `json:"data"`
}

type period struct {
	StartsAt time.Time `json:"starts_at"`
	EndsAt   time.Time `json:"ends_at"`
}

type item struct {
	Quantity int64 `json:"quantity"`
	Price    struct {
		ID        string `json:"id"`
		UnitPrice struct {
			Amount       string `json:"amount"`
			CurrencyCode string `json:"currency_code"`
		} `json:"unit_price"`
		BillingCycle *struct {
			Interval  string `json:"interval"`
			Frequency int    `json:"frequency"`
		} `json:"billing_cycle"`
	} `json:"price"`
}

// subscription is a subscription entity: a subscription.* notification's data, or a read
// of GET /subscriptions.
type subscription struct {
	ID                   string     `json:"id"`
	Status               string     `json:"status"`
	CustomerID           string     `json:"customer_id"`
	TransactionID        string     `json:"transaction_id"` // subscription.created: the transaction that made it
	PausedAt             *time.Time `json:"paused_at"`
	CanceledAt           *time.Time `json:"canceled_at"`
	CurrentBillingPeriod *period    `json:"current_billing_period"`
	ScheduledChange      *struct {
		Action      string    `json:"action"`
		EffectiveAt time.Time `json:"effective_at"`
	} `json:"scheduled_change"`
	Items      []item         `json:"items"`
	CustomData map[string]any `json:"custom_data"`
}

// transaction is a transaction entity (transaction.completed).
type transaction struct {
	ID             string         `json:"id"`
	Status         string         `json:"status"`
	CustomerID     string         `json:"customer_id"`
	SubscriptionID string         `json:"subscription_id"`
	BillingPeriod  *period        `json:"billing_period"`
	Items          []item         `json:"items"`
	CustomData     map[string]any `json:"custom_data"`
}

// adjustment is an adjustment entity (adjustment.created, adjustment.updated): a refund,
// credit or chargeback of a transaction.
type adjustment struct {
	ID             string `json:"id"`
	Action         string `json:"action"`
	Type           string `json:"type"` // full or partial
	Status         string `json:"status"`
	TransactionID  string `json:"transaction_id"`
	SubscriptionID string `json:"subscription_id"`
	CustomerID     string `json:"customer_id"`
}

// userOf is the tollgate user a checkout put in custom_data.user_id, or "".
func userOf(custom map[string]any) string {
	user, _ := custom["user_id"].(string)
	return user
}

// prices are the items' price ids; amount their price per period in minor units.
func prices(items []item) (ids []string, amount int64, currency, cycle string) {
	for _, it := range items {
		if it.Price.ID == "" {
			continue
		}
		ids = append(ids, it.Price.ID)
		n, err := strconv.ParseInt(it.Price.UnitPrice.Amount, 10, 64)
		if err == nil {
			amount += n * max(it.Quantity, 1)
		}
		currency = it.Price.UnitPrice.CurrencyCode
		if c := it.Price.BillingCycle; c != nil && cycle == "" {
			cycle = isoPeriod(c.Interval, c.Frequency)
		}
	}
	return ids, amount, currency, cycle
}

// isoPeriod is a billing cycle as an ISO 8601 duration ("P1M").
func isoPeriod(interval string, frequency int) string {
	unit := map[string]string{"day": "D", "week": "W", "month": "M", "year": "Y"}[interval]
	if unit == "" || frequency <= 0 {
		return ""
	}
	return "P" + strconv.Itoa(frequency) + unit
}
