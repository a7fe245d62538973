// Package app wires tollgate together: commands, configuration, the HTTP server, its
// middleware and the operational routes.
package app

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/tollgate/tollgate/internal/config"
)

// DevEnvFile holds development-only settings so that a fresh clone runs with nothing
// exported. It is never read in production.
const DevEnvFile = ".env.development"

const usage = `tollgate — sign-in forms, a token-guarded API and billing webhooks in one binary.

Usage:
  tollgate serve                 run the HTTP server (migrates first unless AUTO_MIGRATE=false)
  tollgate migrate               apply database migrations and exit
  tollgate plans sync            reconcile the plans file (PLANS_FILE) into the database
  tollgate events replay [...]   re-run stored webhook events through the processors
  tollgate webhook send [...]    sign a JSON event and POST it to a running server
  tollgate keys create --name N   make a service key for a trusted backend (shown once)
  tollgate keys list             list service keys: name, prefix, created, last used
  tollgate keys revoke NAME      revoke a service key at once
  tollgate users show USER_ID [--json]
                                 what tollgate knows of a user's billing
  tollgate entitlements check USER_ID NAME
                                 print whether a user is entitled to NAME (exit 0 yes, 1 no)
  tollgate healthcheck [--url]   exit 0 if a running server answers /healthz (for containers)

Configuration comes from the environment (see README.md). "tollgate COMMAND --help" describes a command.
`

// commands are the commands that run with the configuration, by name; a name of two words
// belongs to a group ("keys create").
func commands() map[string]func(*flag.FlagSet) command {
	return map[string]func(*flag.FlagSet) command{
		"serve":              cmdServe,
		"migrate":            cmdMigrate,
		"plans sync":         cmdPlansSync,
		"events replay":      cmdEventsReplay,
		"webhook send":       cmdWebhookSend,
		"keys create":        cmdKeysCreate,
		"keys list":          cmdKeysList,
		"keys revoke":        cmdKeysRevoke,
		"users show":         cmdUsersShow,
		"entitlements check": cmdEntitlementsCheck,
	}
}

// errUsage is returned after usage text was printed for --help; it means "exit 0".
var errUsage = errors.New("usage printed")

// errNo is a command's printed answer "no": exit 1, with nothing more on stderr.
var errNo = errors.New("the answer is no")

// Run executes one command and returns the process exit code.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	err := run(ctx, args, getenv, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, errUsage):
		return 0
	case errors.Is(err, errNo):
		return 1
	default:
		fmt.Fprintln(stderr, "tollgate: "+strings.ReplaceAll(err.Error(), "\n", "; "))
		return 1
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	table := commands()
	cmd, rest := args[0], args[1:]
	if _, ok := table[cmd+" "+first(rest)]; ok {
		cmd, rest = cmd+" "+rest[0], rest[1:] // a group's command, "keys create"
	}
	switch cmd {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "healthcheck":
		return healthcheck(ctx, rest, getenv, stdout, stderr)
	}
	if build, ok := table[cmd]; ok {
		return withEnv(ctx, cmd, rest, getenv, stdout, stderr, build)
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", strings.Join(args, " "))
}

func first(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// env is what every command gets: its parsed configuration, its positional arguments and
// where to write.
type env struct {
	cfg    config.Config
	args   []string
	log    *slog.Logger
	stdout io.Writer
	stderr io.Writer
}

type command struct {
	// args names the positional arguments the command requires, e.g. "USER_ID NAME";
	// values are those given.
	args   string
	values []string
	help   string
	run    func(ctx context.Context, e env) error
}

// parseFlags builds a command and parses its flags; --help prints its usage (errUsage).
func parseFlags(name string, args []string, stdout, stderr io.Writer, build func(fs *flag.FlagSet) command) (command, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := build(fs)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: tollgate %s\n\n%s\n", strings.TrimSpace(name+" "+c.args), c.help)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
	}
	// Flags may come before, between or after the positional arguments ("users show ID --json").
	for rest := args; ; rest = fs.Args()[1:] {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return c, errUsage
			}
			return c, err
		}
		if fs.NArg() == 0 {
			break
		}
		c.values = append(c.values, fs.Arg(0))
	}
	if want := len(strings.Fields(c.args)); len(c.values) != want {
		if want == 0 {
			return c, fmt.Errorf("%s: unexpected argument %q", name, c.values[0])
		}
		return c, fmt.Errorf("%s: want %s", name, c.args)
	}
	return c, nil
}

// withEnv parses the command's flags, then the configuration, and runs it. Flags come
// first so that --help works without any configuration.
func withEnv(ctx context.Context, name string, args []string, getenv func(string) string, stdout, stderr io.Writer,
	build func(fs *flag.FlagSet) command) error {
	c, err := parseFlags(name, args, stdout, stderr, build)
	if err != nil {
		return err
	}
	getenv, err = withDevEnvFile(getenv)
	if err != nil {
		return err
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	return c.run(ctx, env{cfg: cfg, args: c.values, log: newLogger(cfg, stderr), stdout: stdout, stderr: stderr})
}

// withDevEnvFile layers DevEnvFile under the real environment when APP_ENV is unset or
// development. Variables already set always win.
func withDevEnvFile(getenv func(string) string) (func(string) string, error) {
	if appEnv := getenv("APP_ENV"); appEnv != "" && appEnv != config.Development {
		return getenv, nil
	}
	f, err := os.Open(DevEnvFile)
	if errors.Is(err, os.ErrNotExist) {
		return getenv, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	file := map[string]string{}
	scanner := bufio.NewScanner(f)
	for n := 1; scanner.Scan(); n++ {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok {
			return nil, fmt.Errorf("%s line %d: want KEY=VALUE", DevEnvFile, n)
		}
		file[strings.TrimSpace(key)] = strings.Trim(strings.TrimSpace(value), `"'`)
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	return func(key string) string {
		if v := getenv(key); v != "" {
			return v
		}
		return file[key]
	}, nil
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(requestIDHandler{h})
}
