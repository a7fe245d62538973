package app

import (
	"context"
	"errors"
	"maps"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// TestCommandLinesThatCannotRunAreUsageErrors: a missing required flag or a bad flag
// value prints its error once, then the command's usage, and exits 2, before touching
// anything.
func TestCommandLinesThatCannotRunAreUsageErrors(t *testing.T) {
	env := testEnv(t, map[string]string{"APP_ENV": "development"})
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"keys", "create"}, "keys create: --name is required"},
		{[]string{"dev", "token"}, "dev token: --email is required"},
		{[]string{"webhook", "send", "--provider", "web"}, "webhook send: --file is required"},
		{[]string{"webhook", "send", "--file", "x.json"}, "webhook send: --provider is required"},
		{[]string{"webhook", "send", "--provider", "card", "--file", "x.json"}, `webhook send: --provider: want web, mobile, appstore, playstore or paddle, got "card"`},
		{[]string{"webhook", "send", "--provider", "web"}, `webhook send: --file is required`},
		{[]string{"webhook", "send", "--provider", "web", "--file", "x.json", "--header", "x"}, `webhook send: --header: want web or stripe, got "x"`},
		{[]string{"events", "replay", "--provider", "card"}, `events replay: --provider: want web, mobile, appstore, playstore, paddle or grant, got "card"`},
		{[]string{"events", "replay", "--since", "yesterday"}, "events replay: --since: want an RFC 3339 time"},
		{[]string{"billing", "backfill", "mobile"}, `billing backfill: only web or paddle can be backfilled, got "mobile"`},
		{[]string{"billing", "backfill", "web", "--since", "soon"}, "billing backfill: --since"},
		{[]string{"deliveries", "retry"}, "deliveries retry: give either an ID or --failed"},
		{[]string{"deliveries", "retry", "x"}, `deliveries retry: ID: want a delivery id`},
	}
	for _, tc := range cases {
		code, _, errOut := runCmd(context.Background(), env, tc.args...)
		if code != 2 || !strings.HasPrefix(errOut, "tollgate: "+tc.want) || strings.Count(errOut, tc.want) != 1 ||
			!strings.Contains(errOut, "Usage: tollgate "+tc.args[0]+" "+tc.args[1]) {
			t.Errorf("%s: exit %d\n%s\nwant exit 2, %q once, then the usage", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
	if _, err := os.Stat(strings.TrimPrefix(env["DATABASE_URL"], "sqlite:")); err == nil {
		t.Error("a command line that cannot run created the database")
	}
}

// TestOnlyMigrateAndServeChangeASchema: every other command, reading or writing, refuses a
// database that is not migrated, saying where it is, exit 1, with no SQL error, whatever
// AUTO_MIGRATE says: it creates no SQLite file and no table in an empty Postgres database
// (a mistyped DATABASE_URL in a release job must not migrate a server's default
// database). A database migrated in part says how much is missing.
func TestOnlyMigrateAndServeChangeASchema(t *testing.T) {
	const user = "5a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d"
	commands := [][]string{
		{"users", "show", user}, {"entitlements", "check", user, "exports"},
		{"keys", "list"}, {"deliveries", "list"}, {"deliveries", "retry", "--failed"},
		{"plans", "sync"}, {"grants", "list"}, {"dev", "token", "--email", "a@example.com"},
		{"events", "replay", "--unprocessed"}, {"keys", "create", "--name", "x"},
		{"signing-keys", "rotate"}, {"audit", "list"},
	}
	refuses := func(t *testing.T, databaseURL, where string) {
		env := testEnv(t, map[string]string{"APP_ENV": "development", "DATABASE_URL": databaseURL, "AUTO_MIGRATE": "true"})
		for _, args := range commands {
			code, _, errOut := runCmd(context.Background(), env, args...)
			want := "tollgate: database not migrated (" + where + "): run tollgate migrate"
			if code != 1 || !strings.HasPrefix(errOut, want) || strings.Contains(errOut, "no such table") {
				t.Errorf("%s: exit %d %q, want exit 1 and %q", strings.Join(args, " "), code, errOut, want)
			}
		}
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{missing, empty} {
		refuses(t, "sqlite:"+path, "sqlite:"+path)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a command other than migrate created the SQLite file")
	}
	opened, err := db.Open(context.Background(), "sqlite:"+empty, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	if err := opened.CheckMigrated(context.Background()); err != db.ErrNotMigrated {
		t.Errorf("a command other than migrate migrated the empty database: %v", err)
	}

	t.Run("empty postgres", func(t *testing.T) {
		url := dbtest.PostgresURL(t)
		u, _ := neturl.Parse(url)
		refuses(t, url, "postgres:"+u.Host+u.Path)
		empty, err := db.Open(context.Background(), url, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer empty.Close()
		var tables int
		if err := empty.QueryRow("select count(*) from information_schema.tables where table_schema = current_schema()").Scan(&tables); err != nil || tables != 0 {
			t.Errorf("the empty Postgres schema holds %d tables (%v), want none", tables, err)
		}
	})

	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		if err := d.CheckMigrated(context.Background()); err != nil {
			t.Fatalf("a migrated database: %v", err)
		}
		if _, err := d.Exec("delete from goose_db_version where version_id = 12"); err != nil {
			t.Fatal(err)
		}
		var part *db.MissingMigrations
		if err := d.CheckMigrated(context.Background()); !errors.As(err, &part) || part.Missing != 1 {
			t.Fatalf("one migration missing: %v", err)
		}
	})
}

// TestSettingsSayWhatIsWrong: a mistyped variable is named beside the one it resembles, a
// port given as a flag or mistyped leads to PORT (before anything is created), and a
// webhook send that the server refuses, or that cannot sign outside the repository, says
// which setting to look at.
func TestSettingsSayWhatIsWrong(t *testing.T) {
	ctx := context.Background()
	t.Run("a near miss", func(t *testing.T) {
		t.Parallel()
		env := testEnv(t, map[string]string{"ADMIN_EMAIL": "ops@example.test", "DATABSE_URL": "sqlite:elsewhere.db", "HOSTNAME": "box"})
		migrateAndSyncPlans(t, env)
		stop, logs := startServeLogs(t, env)
		stop()
		for typo, meant := range map[string]string{"ADMIN_EMAIL": "ADMIN_EMAILS", "DATABSE_URL": "DATABASE_URL"} {
			if !regexp.MustCompile(`level=WARN msg="` + typo + ` is set but is not one of tollgate's variables.*did you mean ` + meant + `\?"`).MatchString(logs()) {
				t.Errorf("no warning naming %s for %s:\n%s", meant, typo, logs())
			}
		}
		if strings.Contains(logs(), "ops@example.test") || strings.Contains(logs(), "elsewhere.db") || strings.Contains(logs(), "HOSTNAME") {
			t.Errorf("a warning printed a value, or named HOSTNAME:\n%s", logs())
		}
	})
	t.Run("a port", func(t *testing.T) {
		t.Parallel()
		env := testEnv(t, nil)
		path := strings.TrimPrefix(env["DATABASE_URL"], "sqlite:")
		code, _, errOut := runCmd(ctx, env, "serve", "--port", "1")
		if code != 2 || !strings.Contains(errOut, "--port: tollgate takes its settings from the environment") || !strings.Contains(errOut, "set PORT") {
			t.Errorf("serve --port 1: exit %d %q", code, errOut)
		}
		delete(env, "ADDR")
		env["PORT"] = "80a"
		code, _, errOut = runCmd(ctx, env, "serve")
		if code != 1 || !strings.Contains(errOut, `PORT: want a port number from 0 to 65535, got "80a"`) {
			t.Errorf("PORT=80a serve: exit %d %q", code, errOut)
		}
		if _, err := os.Stat(path); err == nil {
			t.Error("a serve that cannot listen created the database")
		}
	})
	t.Run("webhook send", func(t *testing.T) {
		t.Parallel()
		env := testEnv(t, nil)
		migrateAndSyncPlans(t, env)
		startServe(t, env)
		const file = "../billing/testdata/web/customer.subscription.updated.json"
		wrong := maps.Clone(env)
		wrong["WEB_WEBHOOK_SECRET"] = "whsec_not_the_servers"
		code, _, errOut := runCmd(ctx, wrong, "webhook", "send", "--provider", "web", "--file", file)
		if code != 1 || !strings.Contains(errOut, "401") || !strings.Contains(errOut, "the WEB_WEBHOOK_SECRET this command signed with and the server's differ") {
			t.Errorf("a wrong secret: exit %d %q", code, errOut)
		}
		wrong = maps.Clone(env)
		wrong["MOBILE_WEBHOOK_SECRET"] = "not the server's"
		code, _, errOut = runCmd(ctx, wrong, "webhook", "send", "--provider", "mobile", "--file", "../billing/testdata/mobile/subscription_started.json")
		if code != 1 || !strings.Contains(errOut, "MOBILE_WEBHOOK_SECRET this command sent and the server's differ") || strings.Contains(errOut, "not the server's") {
			t.Errorf("a wrong mobile secret: exit %d %q", code, errOut)
		}
		// Run where there is no .env.development (the test runs in internal/app), in development.
		outside := maps.Clone(env)
		delete(outside, "APP_ENV")
		delete(outside, "WEB_WEBHOOK_SECRET")
		code, _, errOut = runCmd(ctx, outside, "webhook", "send", "--provider", "web", "--file", file)
		if code != 1 || !strings.Contains(errOut, "WEB_WEBHOOK_SECRET") || !strings.Contains(errOut, "no .env.development at ") || !strings.Contains(errOut, "run tollgate from the repository root") {
			t.Errorf("webhook send outside the repository: exit %d %q", code, errOut)
		}
	})
}
