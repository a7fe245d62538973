// Package dbtest gives tests fresh, migrated databases on both engines: SQLite always, and
// Postgres when TEST_DATABASE_URL is set (each test in a schema of its own).
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/tcpproxy"
)

// Engines runs fn once per available engine, as subtests named after the engine.
func Engines(t *testing.T, fn func(t *testing.T, d *db.DB)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, Postgres(t)) })
}

// SQLite opens a migrated database in a temporary file.
func SQLite(t testing.TB) *db.DB {
	t.Helper()
	return Open(t, "sqlite:"+filepath.Join(t.TempDir(), "test.db"))
}

// Postgres opens a migrated database in a fresh schema, or skips without TEST_DATABASE_URL.
func Postgres(t testing.TB) *db.DB {
	t.Helper()
	return Open(t, PostgresURL(t))
}

// PostgresURL creates an empty schema and returns a URL whose connections use it. The
// schema is dropped when the test ends. In CI a missing or unreachable Postgres fails.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("TEST_DATABASE_URL must be set in CI: the suite runs on Postgres too")
		}
		t.Skip("TEST_DATABASE_URL not set: Postgres tests skipped")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("TEST_DATABASE_URL: %v", err)
	}
	defer admin.Close()
	var b [6]byte
	rand.Read(b[:])
	schema := "test_" + hex.EncodeToString(b[:])
	if _, err := admin.ExecContext(context.Background(), "create schema "+schema); err != nil {
		t.Fatalf("Postgres at TEST_DATABASE_URL unreachable: %v", err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer admin.Close()
		admin.ExecContext(context.Background(), "drop schema "+schema+" cascade")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// PostgresBehindProxy is PostgresURL reached through a tcpproxy, for outage tests: proxied
// goes through the proxy (Cut, Stall), direct does not (to check what was stored).
func PostgresBehindProxy(t testing.TB) (proxied, direct string, proxy *tcpproxy.Proxy) {
	t.Helper()
	direct = PostgresURL(t)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	proxy = tcpproxy.New(t, u.Host)
	u.Host = proxy.Addr
	return u.String(), direct, proxy
}

// Open opens and migrates databaseURL, closing it when the test ends.
func Open(t testing.TB, databaseURL string) *db.DB {
	t.Helper()
	ctx := context.Background()
	d, err := db.Open(ctx, databaseURL, 0)
	if err != nil {
		t.Fatalf("open %s: %v", databaseURL, err)
	}
	t.Cleanup(func() { d.Close() })
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return d
}
