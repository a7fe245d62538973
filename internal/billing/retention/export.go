package retention

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Record is one stored event with everything its row holds, as an export or archive
// writes it: one JSON object per line.
type Record struct {
	ID              string          `json:"id"`
	Provider        string          `json:"provider"`
	ProviderEventID string          `json:"provider_event_id"`
	EventType       string          `json:"event_type"`
	Payload         json.RawMessage `json:"payload"`
	ReceivedAt      time.Time       `json:"received_at"`
	ProcessedAt     *time.Time      `json:"processed_at"`
	ProcessingError *string         `json:"processing_error"`
	Outcome         *string         `json:"outcome"`
	UserID          *string         `json:"user_id"`
	SubscriptionID  *string         `json:"subscription_id"`
	PlanBefore      *string         `json:"plan_before"`
	StatusBefore    *string         `json:"status_before"`
	PeriodEndBefore *time.Time      `json:"period_end_before"`
	PlanAfter       *string         `json:"plan_after"`
	StatusAfter     *string         `json:"status_after"`
	PeriodEndAfter  *time.Time      `json:"period_end_after"`
	MovedFromUserID *string         `json:"moved_from_user_id"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
}

func recordOf(r dbq.EventsBeforeRow) Record {
	payload := r.Payload
	if !json.Valid(payload) {
		payload, _ = json.Marshal(string(payload)) // never expected: the column is JSON
	}
	return Record{
		ID: r.ID, Provider: r.Provider, ProviderEventID: r.ProviderEventID, EventType: r.EventType, Payload: payload,
		ReceivedAt: r.ReceivedAt.UTC(), ProcessedAt: nullTime(r.ProcessedAt), ProcessingError: nullText(r.ProcessingError),
		Outcome: nullText(r.Outcome), UserID: nullText(r.UserID), SubscriptionID: nullText(r.SubscriptionID),
		PlanBefore: nullText(r.PlanBefore), StatusBefore: nullText(r.StatusBefore), PeriodEndBefore: nullTime(r.PeriodEndBefore),
		PlanAfter: nullText(r.PlanAfter), StatusAfter: nullText(r.StatusAfter), PeriodEndAfter: nullTime(r.PeriodEndAfter),
		MovedFromUserID: nullText(r.MovedFromUserID), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
}

func nullText(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

func nullTime(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}

// firstID sorts before every event id (a UUID), where a page of events starts.
const firstID = "00000000-0000-0000-0000-000000000000"

// exportPage is how many events an export reads at a time.
const exportPage = 1000

// Export writes every stored event received before before to w as NDJSON, oldest first,
// and says how many it wrote.
func Export(ctx context.Context, d *db.DB, w io.Writer, before time.Time) (int, error) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	after := dbq.EventsBeforeParams{Before: before.UTC(), Max: exportPage, AfterID: firstID}
	n := 0
	for {
		rows, err := dbq.New(d).EventsBefore(ctx, after)
		if err != nil {
			return n, err
		}
		for _, r := range rows {
			if err := enc.Encode(recordOf(r)); err != nil {
				return n, err
			}
			n++
		}
		if len(rows) < exportPage {
			return n, nil
		}
		last := rows[len(rows)-1]
		after.AfterReceived, after.AfterID = last.ReceivedAt, last.ID
	}
}
