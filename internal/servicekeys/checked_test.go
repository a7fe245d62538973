package servicekeys

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// listening starts k's listener and waits until it listens.
func listening(t *testing.T, k *Keys) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); k.ListenForChanges(ctx, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() { cancel(); <-done })
	until(t, 5*time.Second, func() bool {
		k.checked.mu.Lock()
		defer k.checked.mu.Unlock()
		return k.checked.listening
	})
}

// until waits for cond, failing after limit.
func until(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v", limit)
		}
	}
}

func kept(k *Keys, key string) bool {
	k.checked.mu.Lock()
	defer k.checked.mu.Unlock()
	_, ok := k.checked.keys[key]
	return ok
}

// TestCheckedKeysAreKeptWhileListening: a server listening keeps the keys it checked, and
// forgets them when another process revokes one; one that does not listen reads each time.
func TestCheckedKeysAreKeptWhileListening(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		server, cli, quiet := New(d), New(d), New(d) // two processes, and a server that does not listen
		key, err := cli.Create(ctx, "backend")
		if err != nil {
			t.Fatal(err)
		}
		listening(t, server)
		for _, k := range []*Keys{server, quiet} {
			if name, err := k.Check(ctx, key); err != nil || name != "backend" {
				t.Fatalf("Check: %q, %v", name, err)
			}
		}
		if !kept(server, key) || kept(quiet, key) {
			t.Fatalf("kept by the listening server %v, by the other %v: want true, false", kept(server, key), kept(quiet, key))
		}
		if _, err := server.Check(ctx, "tgk_never-made"); !errors.Is(err, ErrUnknown) {
			t.Fatalf("an unknown key: %v", err)
		}

		if err := cli.Revoke(ctx, "backend"); err != nil {
			t.Fatal(err)
		}
		if _, err := quiet.Check(ctx, key); !errors.Is(err, ErrUnknown) {
			t.Fatalf("the server that does not listen, after the revocation: %v", err)
		}
		// Postgres notifies at the commit; SQLite's listener polls every db.PollInterval.
		until(t, 2*time.Second, func() bool { return !kept(server, key) })
		if _, err := server.Check(ctx, key); !errors.Is(err, ErrUnknown) {
			t.Fatalf("the listening server, after the revocation: %v", err)
		}
	})
}

// TestAKeptKeysUseIsStillRecorded: a kept key is read anew once its use is due to be
// recorded again, so last_used_at moves on as without the cache; a revocation in the same
// process stops the key at once.
func TestAKeptKeysUseIsStillRecorded(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		k := New(d)
		now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
		k.now = func() time.Time { return now }
		key, err := k.Create(ctx, "backend")
		if err != nil {
			t.Fatal(err)
		}
		listening(t, k)
		lastUsed := func() time.Time {
			t.Helper()
			keys, err := k.List(ctx)
			if err != nil || len(keys) != 1 || keys[0].LastUsedAt == nil {
				t.Fatalf("List: %v, %v", keys, err)
			}
			return keys[0].LastUsedAt.UTC()
		}
		for _, step := range []struct {
			after time.Duration
			want  time.Time
		}{
			{0, now},
			{30 * time.Second, now}, // kept: no write
			{61 * time.Second, now.Add(61 * time.Second)}, // due: read anew and recorded
		} {
			k.now = func() time.Time { return now.Add(step.after) }
			if _, err := k.Check(ctx, key); err != nil {
				t.Fatal(err)
			}
			if got := lastUsed(); !got.Equal(step.want) {
				t.Fatalf("%v on: last_used_at %v, want %v", step.after, got, step.want)
			}
		}
		if err := k.Revoke(ctx, "backend"); err != nil {
			t.Fatal(err)
		}
		if _, err := k.Check(ctx, key); !errors.Is(err, ErrUnknown) {
			t.Fatalf("after a revocation in the same process: %v", err)
		}
	})
}
