package db_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// modernc.org/sqlite is generated against one exact modernc.org/libc; a mismatched pair
// builds but corrupts memory at run time. Newer releases also break "go mod tidy" here, and
// a newer goose drags libc along: the three are pinned together.
func TestSQLiteLibcPair(t *testing.T) {
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]string{}
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && strings.Contains(f[0], ".") {
			required[f[0]] = f[1]
		}
	}
	for path, want := range map[string]string{"modernc.org/sqlite": "v1.60.0", "modernc.org/libc": "v1.77.1", "github.com/pressly/goose/v3": "v3.28.0"} {
		if got := required[path]; got != want {
			t.Errorf("go.mod requires %s %q, want %s", path, got, want)
		}
	}
}

func TestEngines(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		// The generated queries use $N placeholders, out of order and repeated.
		var a, b string
		if err := d.QueryRowContext(ctx, "select $2, $1", "one", "two").Scan(&a, &b); err != nil {
			t.Fatal(err)
		}
		if a != "two" || b != "one" {
			t.Fatalf("$2,$1 bound as %q,%q", a, b)
		}
		applied, err := d.Migrate(ctx)
		if err != nil {
			t.Fatalf("second migrate: %v", err)
		}
		if len(applied) != 0 {
			t.Fatalf("second migrate applied %v", applied)
		}
	})
}

func TestDescribeDatabaseHidesCredentials(t *testing.T) {
	for url, want := range map[string]string{
		"sqlite:tollgate.db": "sqlite tollgate.db",
		"postgres://tollgate:hunter2@db.internal:5432/billing?sslmode=require": "postgres db.internal:5432/billing",
		"postgresql://db.internal/billing":                                     "postgres db.internal/billing",
	} {
		if got := db.Describe(url); got != want {
			t.Errorf("Describe(%q) = %q, want %q", url, got, want)
		}
	}
}

// A database a newer build migrated is refused, by the commands that only read and by
// migrate alike, naming both versions: this build cannot know what its tables mean.
func TestANewerSchemaIsRefused(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		if err := d.CheckMigrated(ctx); err != nil {
			t.Fatalf("a database this build migrated: %v", err)
		}
		if _, err := d.ExecContext(ctx, "insert into goose_db_version (version_id, is_applied) values (9001, true)"); err != nil {
			t.Fatal(err)
		}
		for name, check := range map[string]func() error{
			"CheckMigrated": func() error { return d.CheckMigrated(ctx) },
			"Migrate":       func() error { _, err := d.Migrate(ctx); return err },
		} {
			err := check()
			var newer *db.NewerSchema
			if !errors.As(err, &newer) {
				t.Fatalf("%s: %v, want a NewerSchema", name, err)
			}
			if !strings.Contains(err.Error(), "9001") || !strings.Contains(err.Error(), fmt.Sprint(newer.Known)) || newer.Known < 27 {
				t.Errorf("%s: %q names neither both versions", name, err)
			}
		}
	})
}

// A database that cannot be used is one line naming where, as whom, and what to check:
// not the driver's text, which repeats itself once per address tried.
func TestUnreachableDatabasesAreOneSentence(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close() // nothing listens there now
	cases := map[string]struct{ url, want string }{
		"refused":     {"postgres://tollgate:hunter2@" + refused + "/billing", "nothing accepts connections at " + refused},
		"missing dir": {"sqlite:" + filepath.Join(t.TempDir(), "no", "such", "dir", "t.db"), "such/dir does not exist"},
	}
	if base := os.Getenv("TEST_DATABASE_URL"); base != "" {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword("no_such_role_x", "hunter2")
		cases["unknown role"] = struct{ url, want string }{u.String(), `at ` + u.Host + `: there is no role "no_such_role_x"`}
	}
	for name, tc := range cases {
		_, err := db.Open(context.Background(), tc.url, 0)
		if err == nil {
			t.Fatalf("%s: opened", name)
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, "hunter2") || strings.Contains(msg, "\n") ||
			strings.Contains(msg, "dial error") || strings.Contains(msg, "SQLSTATE") || strings.Contains(msg, "(14)") {
			t.Errorf("%s: %q, want one line with %q", name, msg, tc.want)
		}
	}
}

// Google Play's events stored before they were named by Google's names are renamed by
// migration 28: "subscription.4" becomes SUBSCRIPTION_PURCHASED; an unknown number stays.
func TestPlayEventsAreRenamed(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		for id, kind := range map[string]string{"m1": "subscription.4", "m2": "subscription.99", "m3": "voided"} {
			if _, err := d.ExecContext(ctx, "insert into provider_events (id, provider, provider_event_id, event_type, received_at, created_at, updated_at) "+
				"values ($1, 'playstore', $2, $3, current_timestamp, current_timestamp, current_timestamp)", uuid.NewString(), id, kind); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.ExecContext(ctx, "insert into provider_events (id, provider, provider_event_id, event_type, received_at, created_at, updated_at) "+
			"values ($1, 'paddle', 'p1', 'subscription.4', current_timestamp, current_timestamp, current_timestamp)", uuid.NewString()); err != nil {
			t.Fatal(err)
		}
		// The migration again, over events stored as an earlier tollgate stored them.
		migration, err := os.ReadFile(filepath.Join("migrations", string(d.Engine), "00028_play_event_names.sql"))
		if err != nil {
			t.Fatal(err)
		}
		up, _, _ := strings.Cut(string(migration), "-- +goose Down")
		if _, err := d.ExecContext(ctx, up); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]string{"m1": "SUBSCRIPTION_PURCHASED", "m2": "subscription.99", "m3": "voided", "p1": "subscription.4"} {
			var got string
			if err := d.QueryRowContext(ctx, "select event_type from provider_events where provider_event_id = $1", id).Scan(&got); err != nil || got != want {
				t.Errorf("%s: %q %v, want %q", id, got, err, want)
			}
		}
	})
}
