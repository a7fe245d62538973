package console

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// TestRecentCustomersAreTheNewestOfBoth: the customers seen last, read as each table's
// newest, are the 50 users whose latest sign-in or customer record is newest, ties by id,
// each once, against the same worked out from every row.
func TestRecentCustomersAreTheNewestOfBoth(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		base := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
		latest := map[string]time.Time{}
		seen := func(user string, at time.Time) {
			if at.After(latest[user]) {
				latest[user] = at
			}
		}
		for i := range 90 {
			user := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
			if i%3 != 0 { // signed in: every other minute, some at the same instant
				at := base.Add(time.Duration(i/2) * time.Minute)
				if _, err := d.ExecContext(ctx, `insert into known_users (user_id, email, first_seen, last_seen) values ($1, $2, $3, $3)`, user, user+"@example.test", at); err != nil {
					t.Fatal(err)
				}
				seen(user, at)
			}
			if i%2 == 0 { // a customer, made at its own times
				at := base.Add(time.Duration(90-i) * 37 * time.Second)
				if _, err := d.ExecContext(ctx, `insert into billing_customers (user_id, created_at, updated_at) values ($1, $2, $2)`, user, at); err != nil {
					t.Fatal(err)
				}
				seen(user, at)
			}
		}
		var want []string
		for user := range latest {
			want = append(want, user)
		}
		sort.Slice(want, func(i, j int) bool {
			a, b := latest[want[i]], latest[want[j]]
			if !a.Equal(b) {
				return a.After(b)
			}
			return want[i] < want[j]
		})
		want = want[:50]
		got, err := dbq.New(d).RecentCustomers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("customers seen last:\n got %v\nwant %v", got, want)
		}
	})
}
