package console

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// TestEventPagesWalkEveryEventOnce: pages of every size, walked from the first, give the
// events that need a hand newest first, then the rest newest first, each once, whichever
// page the boundary between the two falls on.
func TestEventPagesWalkEveryEventOnce(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
		var want []string
		var problems, others []string
		for i := range 17 {
			id, outcome := fmt.Sprintf("evt_%02d", i), "applied"
			if i%3 == 0 {
				outcome = []string{"unresolved", "invalid"}[i%2]
			}
			if _, err := d.ExecContext(ctx, `insert into provider_events (provider, provider_event_id, event_type, payload, received_at, created_at, updated_at, outcome)
				values ('web', $1, 'customer.subscription.updated', '{}', $2, $2, $2, $3)`, id, now.Add(time.Duration(i)*time.Minute), outcome); err != nil {
				t.Fatal(err)
			}
			if outcome == "applied" {
				others = append([]string{id}, others...)
			} else {
				problems = append([]string{id}, problems...)
			}
		}
		want = append(problems, others...)
		c := consoleOver(t, d, func() time.Time { return now })
		for size := 1; size <= len(want)+1; size++ {
			var got []string
			for skip := 0; skip <= len(want); skip += size {
				rows, err := c.listEvents(ctx, dbq.ListProblemEventsParams{Provider: "", EventType: "", Outcome: "", Max: int32(size), Skip: int32(skip)})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rows {
					got = append(got, r.ProviderEventID)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("pages of %d:\n got %v\nwant %v", size, got, want)
			}
		}
	})
}
