package retention_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/retention"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// smallDisk is a 256 KiB file system of the test's own (tmpfs), unmounted when it ends.
// Mounting one needs root, as CI runs; elsewhere the test is skipped.
func smallDisk(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", dir).Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mounting a small tmpfs: %v (CI runs as root)", err)
		}
		t.Skipf("mounting a small tmpfs needs root: %v", err)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// fill writes a file on dir's file system until it is full, and gives its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return path
		}
	}
}

// TestAFullArchiveDiskLosesNothing: a prune whose archive write fails (a full disk)
// deletes nothing and leaves the day's file as it was, with no torn member; once space is
// freed, the next prune appends to it, and the file decompresses whole (gzip -d), holding
// every deleted event once.
func TestAFullArchiveDiskLosesNothing(t *testing.T) {
	t.Parallel()
	dir := smallDisk(t)
	h := billingtest.New(t, dbtest.SQLite(t))
	day := billingtest.Now.Add(-300 * 24 * time.Hour)
	send := func(name string, at time.Time) {
		t.Helper()
		body := billingtest.Edit(t, billingtest.Fixture(t, "web/customer.subscription.updated.json"), func(m map[string]any) { m["id"] = "evt_" + name })
		body, err := stripe.MoveToNow(body, at)
		if err != nil {
			t.Fatal(err)
		}
		h.SetNow(at)
		if rec := h.SendWeb(body); rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", name, rec.Code, rec.Body)
		}
	}
	send("newest", billingtest.Now.Add(-10*24*time.Hour)) // the subscription's newest: kept
	for i := range 40 {
		send(fmt.Sprint("first", i), day.Add(time.Duration(i)*time.Minute))
	}
	h.SetNow(billingtest.Now)
	p := retention.New(h.DB, retention.Options{Window: 200 * 24 * time.Hour, Unresolved: 400 * 24 * time.Hour, Clock: h.Clock, ArchiveDir: dir})
	if res, err := p.Pass(context.Background(), false); err != nil || res.Removed != 40 || len(res.Archived) != 1 {
		t.Fatalf("the first prune: %+v %v", res, err)
	}
	archive := filepath.Join(dir, "events-"+day.Format(time.DateOnly)+".ndjson.gz")
	for i := range 40 {
		send(fmt.Sprint("second", i), day.Add(time.Duration(i)*time.Minute+time.Second))
	}
	h.SetNow(billingtest.Now)
	before, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	filler := fill(t, dir)
	if _, err := p.Pass(context.Background(), false); err == nil {
		t.Fatal("a prune on a full disk succeeded")
	}
	if n := h.CountEvents(); n != 41 {
		t.Fatalf("%d events left after a failed prune, want all 41", n)
	}
	if after, _ := os.ReadFile(archive); !bytes.Equal(after, before) {
		t.Fatalf("the archive went from %d to %d bytes in a failed prune: a torn member", len(before), len(after))
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if res, err := p.Pass(context.Background(), false); err != nil || res.Removed != 40 {
		t.Fatalf("the prune after space was freed: %+v %v", res, err)
	}
	out, err := exec.Command("gzip", "-dc", archive).Output()
	if err != nil {
		t.Fatalf("gzip -d: %v", err)
	}
	seen := map[string]int{}
	lines := bufio.NewScanner(bytes.NewReader(out))
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var r retention.Record
		if err := json.Unmarshal(lines.Bytes(), &r); err != nil {
			t.Fatalf("a line of the archive: %v", err)
		}
		seen[r.ProviderEventID]++
	}
	if len(seen) != 80 {
		t.Fatalf("%d events in the archive, want the 80 deleted", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s archived %d times", id, n)
		}
	}
}
