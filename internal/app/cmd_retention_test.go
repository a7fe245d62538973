package app

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// TestEventsPruneAndExport: events export writes gzipped NDJSON of the events before a
// date; events prune --dry-run counts and removes nothing, events prune removes what is
// older than EVENT_RETENTION and is in the audit log; without EVENT_RETENTION it says
// how to turn it on, and a window under 180 days is refused.
func TestEventsPruneAndExport(t *testing.T) {
	t.Parallel()
	env := testEnv(t, map[string]string{"EVENT_RETENTION": "200d", "USER": "carol"})
	ctx := context.Background()
	if code, _, errOut := runCmd(ctx, env, "migrate"); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	d := dbtest.Open(t, env["DATABASE_URL"])
	now := time.Now().UTC()
	for i, ago := range []time.Duration{400, 300, 10} {
		at := now.Add(-ago * 24 * time.Hour)
		if _, err := d.Exec(`insert into provider_events (provider, provider_event_id, event_type, payload, received_at, processed_at, outcome, created_at, updated_at)
			values ('web', $1, 'customer.subscription.updated', $2, $3, $3, 'applied', $3, $3)`, "evt_old_"+string(rune('a'+i)), []byte(`{"id":"x"}`), at); err != nil {
			t.Fatal(err)
		}
	}

	out := filepath.Join(t.TempDir(), "events.ndjson.gz")
	if code, _, errOut := runCmd(ctx, env, "events", "export", "--before", now.Add(-200*24*time.Hour).Format(time.DateOnly), "--gzip", "--out", out); code != 0 ||
		!strings.Contains(errOut, "exported 2 event(s)") {
		t.Fatalf("events export: %d %s", code, errOut)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	lines := bufio.NewScanner(zr)
	n := 0
	for lines.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(lines.Bytes(), &rec); err != nil || rec["provider_event_id"] == nil || rec["payload"] == nil {
			t.Fatalf("line %d: %q %v", n+1, lines.Text(), err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d lines, want 2", n)
	}

	if code, stdout, errOut := runCmd(ctx, env, "events", "prune", "--dry-run"); code != 0 || !strings.HasPrefix(stdout, "would remove 2 event(s)") {
		t.Fatalf("dry run: %d %q %s", code, stdout, errOut)
	}
	if code, stdout, errOut := runCmd(ctx, env, "events", "prune"); code != 0 || !strings.HasPrefix(stdout, "removed 2 event(s)") {
		t.Fatalf("prune: %d %q %s", code, stdout, errOut)
	}
	var left, keys int
	if err := d.QueryRow(`select (select count(*) from provider_events), (select count(*) from pruned_events)`).Scan(&left, &keys); err != nil || left != 1 || keys != 2 {
		t.Fatalf("%d events and %d keys left (%v)", left, keys, err)
	}
	if code, stdout, _ := runCmd(ctx, env, "audit", "list"); code != 0 || !strings.Contains(stdout, "cli:carol  events prune  older than 200d  user -: 2 removed") {
		t.Fatalf("audit list: %q", stdout)
	}

	delete(env, "EVENT_RETENTION")
	if code, _, errOut := runCmd(ctx, env, "events", "prune"); code == 0 || !strings.Contains(errOut, "EVENT_RETENTION: is not set") {
		t.Fatalf("without EVENT_RETENTION: %d %s", code, errOut)
	}
	env["EVENT_RETENTION"] = "90d"
	if code, _, errOut := runCmd(ctx, env, "events", "prune"); code == 0 || !strings.Contains(errOut, "180d or more") {
		t.Fatalf("EVENT_RETENTION=90d: %d %s", code, errOut)
	}
}

// TestServeRemovesOldEventsAtStartUp: with EVENT_RETENTION and ARCHIVE_DIR, serve
// archives and removes the events past the window as it starts.
func TestServeRemovesOldEventsAtStartUp(t *testing.T) {
	t.Parallel()
	archive := t.TempDir()
	env := testEnv(t, map[string]string{"EVENT_RETENTION": "200d", "ARCHIVE_DIR": archive})
	if code, _, errOut := runCmd(context.Background(), env, "migrate"); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	d := dbtest.Open(t, env["DATABASE_URL"])
	old := time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)
	for _, id := range []string{"evt_archived_a", "evt_archived_b"} {
		if _, err := d.Exec(`insert into provider_events (provider, provider_event_id, event_type, payload, received_at, processed_at, outcome, created_at, updated_at)
			values ('web', $1, 'customer.subscription.updated', $2, $3, $3, 'applied', $3, $3)`, id, []byte(`{"id":"`+id+`"}`), old); err != nil {
			t.Fatal(err)
		}
	}
	startServe(t, env)
	waitFor(t, func() bool {
		var n int
		return d.QueryRow(`select count(*) from provider_events`).Scan(&n) == nil && n == 0
	})
	f, err := os.Open(filepath.Join(archive, "events-2025-03-04.ndjson.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(zr)
	var ids []string
	for lines.Scan() {
		var rec struct {
			ProviderEventID string `json:"provider_event_id"`
		}
		if err := json.Unmarshal(lines.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ProviderEventID)
	}
	slices.Sort(ids) // received at one instant, archived in id order
	if strings.Join(ids, " ") != "evt_archived_a evt_archived_b" {
		t.Fatalf("archived %v", ids)
	}
}
