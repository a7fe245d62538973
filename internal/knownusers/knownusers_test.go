package knownusers_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/knownusers"
)

const user = "00000000-0000-4000-8000-000000000001"

func emailOf(t *testing.T, d *db.DB, userID string) string {
	t.Helper()
	var e string
	err := d.QueryRowContext(context.Background(), "select email from known_users where user_id = $1", userID).Scan(&e)
	if errors.Is(err, sql.ErrNoRows) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func flush(t *testing.T, r *knownusers.Recorder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// A session's user is written once: a second request of the same session writes nothing,
// even with another e-mail in its claims; a new session, or a sign-in, writes again.
func TestEachSessionIsRecordedOnce(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		r := knownusers.New(d, slog.New(slog.NewTextHandler(io.Discard, nil)))
		r.Saw("session-1", user, "first@example.test")
		flush(t, r)
		r.Saw("session-1", user, "changed@example.test")
		flush(t, r)
		if got := emailOf(t, d, user); got != "first@example.test" {
			t.Fatalf("after two requests of one session: %q", got)
		}
		r.Saw("session-2", user, "changed@example.test")
		flush(t, r)
		if got := emailOf(t, d, user); got != "changed@example.test" {
			t.Fatalf("after a new session: %q", got)
		}
		r.SignedIn(user, "signed-in@example.test")
		flush(t, r)
		if got := emailOf(t, d, user); got != "signed-in@example.test" {
			t.Fatalf("a sign-in is always recorded: %q", got)
		}
		var nobody *knownusers.Recorder
		nobody.Saw("s", user, "x@example.test") // a nil recorder records nothing, and does not fail
	})
}

// With the database stuck, noting a user returns at once however many requests note one;
// the write fails within DB_TIMEOUT off the request path, and the session is noted again
// by its next request once the database answers.
func TestRecordingNeverWaitsForTheDatabase(t *testing.T) {
	proxied, _, proxy := dbtest.PostgresBehindProxy(t)
	d := dbtest.Open(t, proxied)
	d.WatchRequests(500*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	r := knownusers.New(d, slog.New(slog.NewTextHandler(io.Discard, nil)))
	proxy.Stall()
	start := time.Now()
	for i := range 1000 {
		r.Saw(fmt.Sprintf("session-%d", i%3), user, fmt.Sprintf("u%d@example.test", i))
	}
	took := time.Since(start)
	if took > 100*time.Millisecond {
		t.Fatalf("1000 requests noting users took %v with the database stuck", took)
	}
	t.Logf("1000 requests noted their users in %v with the database stuck", took)
	flush(t, r) // the write gives up within DB_TIMEOUT
	proxy.Resume()
	r.Saw("session-1", user, "after@example.test")
	flush(t, r)
	if got := emailOf(t, d, user); got != "after@example.test" {
		t.Fatalf("the session whose write failed was not recorded on its next request: %q", got)
	}
}
