package billingtest

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"
)

// CountEvents is how many provider events are stored.
func (h *Harness) CountEvents() int {
	h.T.Helper()
	return h.CountRows("provider_events")
}

// CountRows is how many rows table holds.
func (h *Harness) CountRows(table string) int {
	h.T.Helper()
	var n int
	if err := h.DB.QueryRow("select count(*) from " + table).Scan(&n); err != nil {
		h.T.Fatal(err)
	}
	return n
}

// CanonicalRow is what a canonical subscription says, with its user.
type CanonicalRow struct {
	Status    string
	PeriodEnd *time.Time
	Plan      string
	UserID    string
}

// Canonical reads the canonical subscription for a provider subscription id, or nil.
func (h *Harness) Canonical(provider, subscriptionID string) *CanonicalRow {
	h.T.Helper()
	var row CanonicalRow
	var end sql.NullTime
	err := h.DB.QueryRow(`select s.status, s.current_period_end, p.key, c.user_id
		from subscriptions s
		join provider_subscriptions ps on ps.id = s.provider_subscription_id
		join plans p on p.id = s.plan_id
		join billing_customers c on c.id = s.billing_customer_id
		where ps.provider = $1 and ps.provider_subscription_id = $2`, provider, subscriptionID).Scan(&row.Status, &end, &row.Plan, &row.UserID)
	if err == sql.ErrNoRows {
		return nil
	}
	if err != nil {
		h.T.Fatal(err)
	}
	if end.Valid {
		t := end.Time.UTC()
		row.PeriodEnd = &t
	}
	return &row
}

// CanonicalState renders every canonical row and customer link, for comparing databases.
func (h *Harness) CanonicalState() string {
	h.T.Helper()
	var b strings.Builder
	rows, err := h.DB.Query(`select ps.provider_subscription_id, s.status, s.current_period_end, p.key, c.user_id, coalesce(c.web_customer_id, '')
		from subscriptions s
		join provider_subscriptions ps on ps.id = s.provider_subscription_id
		join plans p on p.id = s.plan_id
		join billing_customers c on c.id = s.billing_customer_id
		order by ps.provider_subscription_id`)
	if err != nil {
		h.T.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, status, plan, user, customer string
		var end *time.Time
		if err := rows.Scan(&id, &status, &end, &plan, &user, &customer); err != nil {
			h.T.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s %v %s %s %s\n", id, status, end.UTC(), plan, user, customer)
	}
	if err := rows.Err(); err != nil {
		h.T.Fatal(err)
	}
	return b.String()
}

// DumpTables renders every row of the tables, ordered by id, so that two dumps are equal
// exactly when no row was created, deleted or changed.
func (h *Harness) DumpTables(tables ...string) string {
	h.T.Helper()
	var b strings.Builder
	for _, table := range tables {
		rows, err := h.DB.Query("select * from " + table + " order by id")
		if err != nil {
			h.T.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			values := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range values {
				ptrs[i] = &values[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				h.T.Fatal(err)
			}
			fmt.Fprint(&b, table)
			for i, v := range values {
				if raw, ok := v.([]byte); ok {
					v = string(raw)
				}
				fmt.Fprintf(&b, " %s=%v", cols[i], v)
			}
			b.WriteString("\n")
		}
		if err := rows.Err(); err != nil {
			h.T.Fatal(err)
		}
		rows.Close()
	}
	return b.String()
}

// StoredEvent is what the database holds of a processed provider event.
type StoredEvent struct {
	EventType               string
	Payload                 []byte
	ReceivedAt, ProcessedAt time.Time
	ProcessingError         string
}

// Event reads a stored provider event, failing the test unless it exists and was processed.
func (h *Harness) Event(t testing.TB, provider, id string) StoredEvent {
	t.Helper()
	var e StoredEvent
	var processed *time.Time
	var perr *string
	err := h.DB.QueryRow(`select event_type, payload, received_at, processed_at, processing_error from provider_events
		where provider = $1 and provider_event_id = $2`, provider, id).Scan(&e.EventType, &e.Payload, &e.ReceivedAt, &processed, &perr)
	if err != nil {
		t.Fatalf("event %s %s: %v", provider, id, err)
	}
	if processed == nil {
		t.Fatalf("event %s %s not processed", provider, id)
	}
	e.ProcessedAt = *processed
	if perr != nil {
		e.ProcessingError = *perr
	}
	return e
}
