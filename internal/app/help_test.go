package app

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the CLI golden files in testdata/cli")

// TestCLIGoldens pins what a user sees when asking for help or getting a command line
// wrong: the output, the stream it goes to and the exit code. Run with -update after a
// deliberate change and read the diff.
func TestCLIGoldens(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
		code   int
	}{
		{"help", []string{"help"}, 0},
		{"help", []string{"--help"}, 0},
		{"help", []string{"help", "help"}, 0},
		{"help-plans-sync", []string{"help", "plans", "sync"}, 0},
		{"help-plans-sync", []string{"plans", "sync", "--help"}, 0},
		{"plans-help", []string{"plans", "--help"}, 0},
		{"plans-help", []string{"help", "plans"}, 0},
		{"events-help", []string{"events", "--help"}, 0},
		{"webhook-help", []string{"webhook", "--help"}, 0},
		{"webhook-send-help", []string{"webhook", "send", "-h"}, 0},
		{"billing-backfill-help", []string{"billing", "backfill", "--help"}, 0},
		{"keys-no-command", []string{"keys"}, 2},
		{"grants-add-help", []string{"grants", "add", "--help"}, 0},
		{"events-prune-help", []string{"events", "prune", "--help"}, 0},
		{"wrong-flag", []string{"events", "replay", "--provder", "web"}, 2},
		{"missing-argument", []string{"users", "show"}, 2},
		{"unknown-command", []string{"frobnicate"}, 2},
		{"no-command", nil, 2},
		{"help-unknown", []string{"help", "frobnicate"}, 2},
	} {
		t.Run(strings.Join(append([]string{tc.golden}, tc.args...), " "), func(t *testing.T) {
			code, stdout, stderr := runCmd(context.Background(), nil, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			got := "stdout:\n" + stdout + "stderr:\n" + stderr
			path := filepath.Join("testdata", "cli", tc.golden+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s:\n%s", path, got)
			}
		})
	}
}

// A wrong flag's error is printed once, not once by the flag package and again by Run.
func TestWrongFlagErrorPrintedOnce(t *testing.T) {
	_, _, stderr := runCmd(context.Background(), nil, "serve", "--bogus")
	if n := strings.Count(stderr, "flag provided but not defined"); n != 1 {
		t.Fatalf("the flag error is printed %d times:\n%s", n, stderr)
	}
}

func TestEveryCommandHasHelp(t *testing.T) {
	for _, s := range commands() {
		if s.build == nil {
			continue
		}
		code, out, _ := runCmd(context.Background(), nil, append(strings.Fields(s.name), "--help")...)
		if code != 0 || !strings.HasPrefix(out, "Usage: tollgate "+s.name) {
			t.Errorf("%s --help: exit %d, output %q", s.name, code, out)
		}
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCmd(context.Background(), nil, "version")
	// A test binary has no VCS stamp; the built binary's revision is checked in
	// TestDockerfileBuildsLikeCI.
	if code != 0 || !regexp.MustCompile(`^tollgate \S+ .*go1\.\d+`).MatchString(out) {
		t.Fatalf("version: exit %d, %q", code, out)
	}
}
