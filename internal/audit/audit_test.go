package audit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/audit"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// The log lists what was recorded, newest first, filtered by user, actor, action and time.
func TestRecordAndList(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		for i, e := range []audit.Entry{
			{Actor: "ops@example.test", Action: "replay", Target: "web evt_1", UserID: "u1", Result: "applied"},
			{Actor: audit.CLI("root"), Action: "plans sync", Target: "plans.yaml", Result: "2 changes"},
			{Actor: "ops@example.test", Action: "retry delivery", Target: "7", UserID: "u2", Result: "queued"},
			{Actor: audit.CLI(""), Action: "replay", Target: "web evt_2", UserID: "u1", Result: "failed: boom"},
		} {
			e.At = at.Add(time.Duration(i) * time.Minute)
			if err := audit.Record(ctx, d, e); err != nil {
				t.Fatal(err)
			}
		}
		list := func(f audit.Filter) string {
			t.Helper()
			got, err := audit.List(ctx, d, f)
			if err != nil {
				t.Fatal(err)
			}
			s := ""
			for _, e := range got {
				s += fmt.Sprintf("%s %s %s %s %s %s|", e.At.Format("15:04"), e.Actor, e.Action, e.Target, e.UserID, e.Result)
			}
			return s
		}
		for _, tc := range []struct {
			name string
			f    audit.Filter
			want string
		}{
			{"all, newest first", audit.Filter{}, "12:03 cli replay web evt_2 u1 failed: boom|12:02 ops@example.test retry delivery 7 u2 queued|" +
				"12:01 cli:root plans sync plans.yaml  2 changes|12:00 ops@example.test replay web evt_1 u1 applied|"},
			{"one user's", audit.Filter{UserID: "u1"}, "12:03 cli replay web evt_2 u1 failed: boom|12:00 ops@example.test replay web evt_1 u1 applied|"},
			{"one actor's", audit.Filter{Actor: "ops@example.test", Action: "replay"}, "12:00 ops@example.test replay web evt_1 u1 applied|"},
			{"since", audit.Filter{Since: at.Add(90 * time.Second), Max: 1}, "12:03 cli replay web evt_2 u1 failed: boom|"},
		} {
			if got := list(tc.f); got != tc.want {
				t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
			}
		}
	})
}
