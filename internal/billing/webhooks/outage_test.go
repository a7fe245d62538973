package webhooks_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

func TestDatabaseOutageAnswers503ThenRecovers(t *testing.T) {
	proxied, direct, proxy := dbtest.PostgresBehindProxy(t)
	u, err := url.Parse(proxied)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	d := dbtest.Open(t, u.String())
	h := billingtest.New(t, d)

	h.MustSend(billing.ProviderWeb, billingtest.WebLifecycle(t, "sub_outage")["created"])
	updated := billingtest.WebLifecycle(t, "sub_outage")["updated"]

	proxy.Cut()
	for i := range 3 {
		rec := h.SendWeb(updated)
		if rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("delivery %d during the outage: %d %s, want 503", i, rec.Code, rec.Body)
		}
		if rec.Header().Get("Retry-After") == "" {
			t.Fatal("503 without Retry-After")
		}
	}

	proxy.Start()
	deadline := time.Now().Add(15 * time.Second)
	for {
		rec := h.SendWeb(updated)
		if rec.Code == http.StatusOK {
			break
		}
		if rec.Code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after the outage: %d %s", rec.Code, rec.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}

	check := dbtest.Open(t, direct)
	var n int
	if err := check.QueryRow("select count(*) from provider_events where provider_event_id = $1", "evt_1TESTsubUpdated000000001_sub_outage").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("the retried event is stored %d times, want once", n)
	}
	if got := h.Canonical(billing.ProviderWeb, "sub_outage"); got == nil || got.Status != billing.StatusActive {
		t.Fatalf("canonical after recovery: %+v", got)
	}
}

// TestLockedSQLiteAnswers503WithinDBTimeout: another process holds SQLite's write lock.
// SQLite's wait ignores deadlines, so the lock wait itself is DB_TIMEOUT: the webhook gets
// its 503 in time, and is stored once the lock is released.
func TestLockedSQLiteAnswers503WithinDBTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locked.db")
	d, err := db.Open(context.Background(), "sqlite:"+path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := billingtest.New(t, d)
	d.WatchRequests(time.Second, h.Log, nil)

	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holder, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(context.Background(), "begin immediate"); err != nil {
		t.Fatal(err)
	}
	event := billingtest.WebLifecycle(t, "sub_locked")["updated"]
	start := time.Now()
	rec := h.SendWeb(event)
	if took := time.Since(start); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || took > 3*time.Second {
		t.Fatalf("webhook beside a held write lock: %d after %v, want 503 within DB_TIMEOUT", rec.Code, took)
	}
	if _, err := holder.ExecContext(context.Background(), "rollback"); err != nil {
		t.Fatal(err)
	}
	h.MustSend(billing.ProviderWeb, event)
	if got := h.Canonical(billing.ProviderWeb, "sub_locked"); got == nil || got.Status != billing.StatusActive {
		t.Fatalf("after the lock was released: %+v", got)
	}
}
