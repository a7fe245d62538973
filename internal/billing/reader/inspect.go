package reader

import (
	"context"
	"database/sql"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// UserReport is what tollgate knows of one user's billing, for an operator: the customer
// rows, each provider subscription, the billing view every surface shows, and the newest
// events that name the user or their subscriptions (processed or not).
type UserReport struct {
	UserID        string               `json:"user_id"`
	Customers     []ReportCustomer     `json:"customers"`
	Subscriptions []ReportSubscription `json:"subscriptions"`
	Billing       billing.BillingView  `json:"billing"`
	RecentEvents  []ReportEvent        `json:"recent_events"`
}

// ReportCustomer is a billing_customers row.
type ReportCustomer struct {
	ID            int64     `json:"id"`
	WebCustomerID *string   `json:"web_customer_id"`
	CreatedAt     time.Time `json:"created_at"`
}

// ReportSubscription is one provider subscription with its canonical status: Status as
// people are shown it (lapsed once a live subscription's period has ended unrenewed,
// billing.StatusShown), StoreStatus as the store last said.
type ReportSubscription struct {
	Provider         string     `json:"provider"`
	ID               string     `json:"id"`
	Status           string     `json:"status"`
	StoreStatus      string     `json:"store_status"`
	CurrentPeriodEnd *time.Time `json:"current_period_end"`
	Plan             string     `json:"plan"`
	LastEventID      *string    `json:"last_event_id"`
	LastEventType    *string    `json:"last_event_type"`
	LastEventAt      *time.Time `json:"last_event_at"`
}

// ReportEvent is a stored provider event.
type ReportEvent struct {
	Provider    string     `json:"provider"`
	ID          string     `json:"id"`
	Type        string     `json:"type"`
	ReceivedAt  time.Time  `json:"received_at"`
	ProcessedAt *time.Time `json:"processed_at"`
	// Outcome is what became of it (applied, duplicate, stale, ignored, unresolved, …);
	// nil while unprocessed.
	Outcome         *string `json:"outcome"`
	ProcessingError *string `json:"processing_error"`
}

// Inspect reports on userID. A user tollgate has never seen gets empty lists and the
// default plan. In sync_engine mode the mirrored web subscriptions show in Billing only.
func (s *Reader) Inspect(ctx context.Context, userID string) (UserReport, error) {
	r := UserReport{UserID: userID, Customers: []ReportCustomer{}, Subscriptions: []ReportSubscription{}, RecentEvents: []ReportEvent{}}
	q := dbq.New(s.db)
	customers, err := q.UserCustomers(ctx, userID)
	if err != nil {
		return r, err
	}
	for _, c := range customers {
		r.Customers = append(r.Customers, ReportCustomer{ID: c.ID, WebCustomerID: stringPtr(c.WebCustomerID), CreatedAt: c.CreatedAt.UTC()})
	}
	subs, err := q.UserSubscriptions(ctx, userID)
	if err != nil {
		return r, err
	}
	now := s.now()
	for _, sub := range subs {
		end := timePtr(sub.CurrentPeriodEnd)
		r.Subscriptions = append(r.Subscriptions, ReportSubscription{
			Provider: sub.Provider, ID: sub.ProviderSubscriptionID, Status: billing.StatusShown(sub.Status, end, now), StoreStatus: sub.Status, CurrentPeriodEnd: end,
			Plan: sub.PlanKey, LastEventID: stringPtr(sub.LastEventID), LastEventType: nonEmpty(sub.LastEventType), LastEventAt: timePtr(sub.LastEventAt),
		})
	}
	if r.Billing, err = s.View(ctx, userID); err != nil {
		return r, err
	}
	// The events that name the user, as the console's timeline lists them: by the user
	// each event was resolved to, never by searching payloads (another user's id can
	// contain this one's; a signed payload contains none).
	events, err := q.CustomerTimeline(ctx, dbq.CustomerTimelineParams{UserID: sql.NullString{String: userID, Valid: userID != ""}, Max: 10})
	if err != nil {
		return r, err
	}
	for _, e := range events { // the newest 10
		r.RecentEvents = append(r.RecentEvents, ReportEvent{
			Provider: e.Provider, ID: e.ProviderEventID, Type: e.EventType, ReceivedAt: e.ReceivedAt.UTC(),
			ProcessedAt: timePtr(e.ProcessedAt), Outcome: stringPtr(e.Outcome), ProcessingError: stringPtr(e.ProcessingError),
		})
	}
	return r, nil
}

func stringPtr(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

func timePtr(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
