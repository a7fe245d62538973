package app

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each message a newcomer meets on a wrong first step names its fix, and none carries a
// raw driver error or the internal DSN.
func TestMessagesNameTheirFix(t *testing.T) {
	ctx := context.Background()
	busy := testEnv(t, nil) // ADDR is held open by the test: a port another program uses
	for _, tc := range []struct {
		name   string
		env    map[string]string
		args   []string
		want   []string
		absent []string
	}{
		{"serve outside the repository root", map[string]string{}, []string{"serve"},
			[]string{"MOBILE_WEBHOOK_SECRET", "no " + DevEnvFile + " at ", "run tollgate from the repository root"}, nil},
		{"a sqlite:// URL", testEnv(t, map[string]string{"DATABASE_URL": "sqlite://tollgate.db"}), []string{"migrate"},
			[]string{"DATABASE_URL: want sqlite:PATH", "sqlite:tollgate.db"}, []string{"_pragma", "SQL logic error"}},
		{"a busy port", busy, []string{"serve"}, []string{"ADDR " + busy["ADDR"] + ": the port is in use", "PORT"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCmd(ctx, tc.env, tc.args...)
			if code != 1 {
				t.Errorf("exit %d, want 1: %s", code, errOut)
			}
			for _, want := range tc.want {
				if !strings.Contains(errOut, want) {
					t.Errorf("the message lacks %q: %s", want, errOut)
				}
			}
			for _, absent := range tc.absent {
				if strings.Contains(errOut, absent) {
					t.Errorf("the message says %q: %s", absent, errOut)
				}
			}
		})
	}
}

// Run from another directory (cmd/tollgate, say) in development, a command that would
// create the default SQLite file there refuses, naming the way out; nothing is created.
func TestMigrateOutsideTheRepositoryCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	code, _, errOut := runCmd(context.Background(), map[string]string{}, "migrate")
	if code != 1 || !strings.Contains(errOut, "run tollgate from the repository root") || !strings.Contains(errOut, "DATABASE_URL=sqlite:") {
		t.Errorf("migrate outside the repository: exit %d %q", code, errOut)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("migrate left %s in the directory it ran in", entries[0].Name())
	}
	code, _, errOut = runCmd(context.Background(), map[string]string{"DATABASE_URL": "sqlite:here.db"}, "migrate")
	if _, err := os.Stat(filepath.Join(dir, "here.db")); code != 0 || err != nil {
		t.Errorf("migrate with DATABASE_URL set: exit %d %q %v", code, errOut, err)
	}
}

// A Postgres server that answers but lacks the database says so, with the createdb line.
func TestMissingPostgresDatabaseNamesCreatedb(t *testing.T) {
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		t.Skip("TEST_DATABASE_URL is not set")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/tollgate_no_such_database"
	code, _, errOut := runCmd(context.Background(), testEnv(t, map[string]string{"DATABASE_URL": u.String()}), "migrate")
	if code != 1 || !strings.Contains(errOut, `has no database "tollgate_no_such_database": create it with createdb -h `+u.Hostname()) ||
		strings.Contains(errOut, "unreachable") || strings.Contains(errOut, "SQLSTATE") {
		t.Errorf("missing database: exit %d %q", code, errOut)
	}
}
