package app

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate/tollgate/internal/stores"
)

// readmeWalkThroughs are the README's sections whose commands a newcomer runs in order,
// against one server started as step 1 says.
var readmeWalkThroughs = []string{"## First run", "## A worked example", "## See a downgrade"}

// TestReadmeWalkThroughsRunAsPrinted runs every command of the README's walk-throughs as
// printed, from the repository root with its .env.development, in order, and checks each
// printed answer ("# …" lines; "…" stands for anything). The only stand-ins are the values
// the reader copies from an earlier answer (the user id "1b0e…", the token "eyJ…") and the
// server's address. After the first run and the worked example the first user is Pro; the
// downgrade makes them Free again.
func TestReadmeWalkThroughsRunAsPrinted(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	steps := readmeCommands(t, string(readme))
	if len(steps) < 8 {
		t.Fatalf("found %d commands in the walk-throughs", len(steps))
	}
	dir := t.TempDir()
	addr := holdAddr(t)
	env := map[string]string{ // the rest comes from .env.development, as for the reader
		"ADDR": addr, "PUBLIC_URL": "http://" + addr, "DATABASE_URL": "sqlite:" + filepath.Join(dir, "tollgate.db"),
		"APPSTORE_TEST_CHAIN": filepath.Join(dir, "chain.pem"),
	}
	t.Chdir("../..")
	startServe(t, env) // step 1: go run ./cmd/tollgate serve
	copied := map[string]string{"http://localhost:8080": "http://" + addr}
	for _, s := range steps {
		line := s.command
		for printed, actual := range copied {
			line = strings.ReplaceAll(line, printed, actual)
		}
		t.Logf("$ %s %q", line, s.answers)
		args := shellWords(t, line)
		var code int
		var out, errOut string
		switch {
		case len(args) > 3 && strings.Join(args[:3], " ") == "go run ./cmd/tollgate":
			code, out, errOut = runCmd(context.Background(), env, args[3:]...)
		case args[0] == "curl":
			if _, err := exec.LookPath("curl"); err != nil && os.Getenv("CI") == "" {
				t.Logf("no curl here: %s not run", line)
				continue
			}
			b, err := exec.Command(args[0], append([]string{"-sS", "--fail-with-body"}, args[1:]...)...).CombinedOutput()
			out = string(b)
			if err != nil {
				code = 1
			}
		default:
			t.Fatalf("the README prints a command this test cannot run: %s", s.command)
		}
		if id := regexp.MustCompile(`(?m)^user_id: (\S+)$`).FindStringSubmatch(out); id != nil {
			copied["1b0e…"] = id[1]
		}
		if token := regexp.MustCompile(`(?m)^access_token: (\S+)$`).FindStringSubmatch(out); token != nil {
			copied["eyJ…"] = token[1]
		}
		saysNo := strings.Contains(strings.Join(s.answers, "\n"), "not entitled")
		if code != 0 && !(code == 1 && saysNo) {
			t.Fatalf("%s\nexit %d:\n%s%s", line, code, out, errOut)
		}
		for _, answer := range s.answers {
			for printed, actual := range copied {
				answer = strings.ReplaceAll(answer, printed, actual)
			}
			want := strings.ReplaceAll(regexp.QuoteMeta(answer), "…", ".*")
			if !regexp.MustCompile(`(?m)^` + want).MatchString(out) {
				t.Fatalf("%s\nprinted %q, answered:\n%s%s", line, answer, out, errOut)
			}
		}
	}
	if !strings.Contains(steps[len(steps)-1].answers[0], "not entitled") {
		t.Fatalf("the last step is not the downgrade's check: %+v", steps[len(steps)-1])
	}
}

// readmeStep is a command the README prints and the answers it prints under it.
type readmeStep struct {
	command string
	answers []string
}

// readmeCommands are the commands of the sh blocks in the walk-through sections, joined
// across line continuations, in order.
func readmeCommands(t *testing.T, readme string) []readmeStep {
	var steps []readmeStep
	for _, section := range strings.Split(readme, "\n## ")[1:] {
		if !walkThrough(section) {
			continue
		}
		for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
			text := regexp.MustCompile(`\\\n\s*`).ReplaceAllString(block[1], "")
			for _, line := range strings.Split(text, "\n") {
				line = strings.TrimSpace(line)
				switch {
				case line == "":
				case strings.HasPrefix(line, "# "):
					if len(steps) == 0 {
						t.Fatalf("an answer before any command: %s", line)
					}
					answer, _, _ := strings.Cut(line[2:], "  ") // two spaces begin a remark
					steps[len(steps)-1].answers = append(steps[len(steps)-1].answers, answer)
				default:
					steps = append(steps, readmeStep{command: line})
				}
			}
		}
	}
	return steps
}

func walkThrough(section string) bool {
	for _, heading := range readmeWalkThroughs {
		if strings.HasPrefix("## "+section, heading) {
			return true
		}
	}
	return false
}

// shellWords splits a command line as a POSIX shell would for the quoting the README uses:
// words separated by spaces, '…' and "…" quoting.
func shellWords(t *testing.T, line string) []string {
	var words []string
	var word strings.Builder
	var quote rune
	inWord := false
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %s", line)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}

// TestReadmeModuleSetUpBuilds runs the commands docs/building.md (linked from the README)
// prints to make another module depend on a clone of this repository, as printed, beside a
// clone (here, a link to this one), and builds a program that imports tollgate.
func TestReadmeModuleSetUpBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module (-short)")
	}
	t.Parallel() // a build of its own, beside the tests that mostly wait
	readme, err := os.ReadFile("../../docs/building.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)Until the module is published.*?```sh\n(.*?)```").FindStringSubmatch(string(readme))
	if block == nil {
		t.Fatal("docs/building.md no longer says how to depend on an unpublished tollgate")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	app := filepath.Join(dir, "app")
	if err := os.Symlink(root, filepath.Join(dir, "tollgate")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	main := "package main\n\nimport (\n\t\"context\"\n\t\"os\"\n\n\t\"github.com/tollgate/tollgate\"\n)\n\n" +
		"func main() { os.Exit(tollgate.Main(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr)) }\n"
	if err := os.WriteFile(filepath.Join(app, "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	commands := append([]string{"go mod init example.com/app"}, strings.Split(strings.TrimSpace(block[1]), "\n")...)
	for _, line := range append(commands, "go build -o "+filepath.Join(dir, "app.bin")+" .") {
		args := shellWords(t, line)
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = app
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
}

// TestReadmeIsAReference: the README stays a reference a newcomer reads in one sitting — at
// most 350 lines, no dated readings (a measurement "on 2026-11-27" belongs in no README),
// every store's webhook route in its HTTP surface, and every file it links there.
func TestReadmeIsAReference(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	if n := strings.Count(readme, "\n"); n > 350 {
		t.Errorf("the README has %d lines, want at most 350: details belong in docs/", n)
	}
	prose := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(readme, "")
	if dated := regexp.MustCompile(`(?i)\bon \d{4}-\d{2}-\d{2}|\bone day\b|\ba slow day\b`).FindAllString(prose, -1); len(dated) > 0 {
		t.Errorf("the README has dated readings: %q", dated)
	}
	for _, s := range stores.All() {
		if !strings.Contains(readme, "`POST /billing/webhooks/"+s.Name+"`") {
			t.Errorf("the README's HTTP surface does not list %s's webhook route", s.Name)
		}
	}
	for _, m := range regexp.MustCompile(`\]\(((?:docs|deploy|examples)/[^)#]+)`).FindAllStringSubmatch(readme, -1) {
		if _, err := os.Stat("../../" + m[1]); err != nil {
			t.Errorf("the README links %s, which is not there", m[1])
		}
	}
	for _, file := range []string{"Dockerfile", "deploy/production.env.example"} {
		if !strings.Contains(readme, file) {
			t.Errorf("the README's Deploy section does not name %s", file)
		}
	}
}
