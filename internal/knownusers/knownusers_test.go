package knownusers_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/knownusers"
)

// A session's user is written once: a second request of the same session writes nothing,
// even with another e-mail in its claims; a new session, or a sign-in, writes again.
func TestEachSessionIsRecordedOnce(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		r := knownusers.New(d, slog.New(slog.NewTextHandler(io.Discard, nil)))
		const user = "00000000-0000-4000-8000-000000000001"
		email := func() string {
			t.Helper()
			var e string
			if err := d.QueryRowContext(ctx, "select email from known_users where user_id = $1", user).Scan(&e); err != nil {
				t.Fatal(err)
			}
			return e
		}
		r.Saw(ctx, "session-1", user, "first@example.test")
		r.Saw(ctx, "session-1", user, "changed@example.test")
		if got := email(); got != "first@example.test" {
			t.Fatalf("after two requests of one session: %q", got)
		}
		r.Saw(ctx, "session-2", user, "changed@example.test")
		if got := email(); got != "changed@example.test" {
			t.Fatalf("after a new session: %q", got)
		}
		if !r.SignedIn(ctx, user, "signed-in@example.test") || email() != "signed-in@example.test" {
			t.Fatalf("a sign-in is always recorded: %q", email())
		}
		var nobody *knownusers.Recorder
		nobody.Saw(ctx, "s", user, "x@example.test") // a nil recorder records nothing, and does not fail
	})
}
