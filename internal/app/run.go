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
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/stores"
)

// DevEnvFile holds development-only settings so that a fresh clone runs with nothing
// exported. It is never read in production.
const DevEnvFile = ".env.development"

// commands is the command table, in the order "tollgate help" lists it. A name of two
// words belongs to a group ("keys create"); each command's code is in cmd_<group>.go.
func commands() []spec {
	return []spec{
		{"serve", "run the HTTP server (migrates first unless AUTO_MIGRATE=false)", cmdServe},
		{"migrate", "apply database migrations and exit", cmdMigrate},
		{"plans sync", "reconcile the plans file (PLANS_FILE) into the database", cmdPlansSync},
		{"events replay", "re-run stored webhook events through the processors", cmdEventsReplay},
		{"events prune", "remove stored events older than EVENT_RETENTION (serve does it hourly)", cmdEventsPrune},
		{"events export", "write stored events received before a date as NDJSON (--gzip)", cmdEventsExport},
		{"billing backfill", "read the web provider's subscriptions from its API into billing", cmdBillingBackfill},
		{"reconcile status", "the latest reconcile passes and the drift each found", cmdReconcileStatus},
		{"reconcile", "read the providers' APIs (web, appstore, playstore) and repair drift from billing", cmdReconcile},
		{"webhook send", "sign a JSON event, POST it to a running server, say what it did", cmdWebhookSend},
		{"deliveries list", "outbound webhooks, newest first: status, attempts, last error", cmdDeliveriesList},
		{"deliveries retry", "send a pending or failed outbound webhook again now", cmdDeliveriesRetry},
		{"keys create", "make a service key for a trusted backend (shown once)", cmdKeysCreate},
		{"keys list", "list service keys: name, prefix, created, last used", cmdKeysList},
		{"keys revoke", "revoke a service key at once", cmdKeysRevoke},
		{"signing-keys list", "list tollgate's signing keys (entitlement tokens): kid, state, public key", cmdSigningKeysList},
		{"signing-keys rotate", "add a signing key, signing after the key set's max-age (--now: at once)", cmdSigningKeysRotate},
		{"signing-keys retire", "withdraw a signing key from the key set at once", cmdSigningKeysRetire},
		{"users show", "what tollgate knows of a user's billing", cmdUsersShow},
		{"grants add", "give a user a plan until an end, for a reason", cmdGrantsAdd},
		{"grants list", "list grants: id, user, plan, end, reason", cmdGrantsList},
		{"grants revoke", "end a grant at once, for a reason", cmdGrantsRevoke},
		{"audit list", "what was changed by hand, newest first: who, what, on which user, how it went", cmdAuditList},
		{"entitlements check", "whether a user is entitled to NAME (exit 0 yes, 1 no)", cmdEntitlementsCheck},
		{"dev token", "a bearer token for an e-mail from the development identity service", cmdDevToken},
		{"healthcheck", "exit 0 if a running server answers /healthz (for containers)", cmdHealthcheck},
		{"version", "print the version and the source revision", cmdVersion},
		{"help", "describe tollgate, a group or a command", nil},
	}
}

// spec is one command: its name, the line "tollgate help" shows, and how to build it.
type spec struct {
	name    string
	summary string
	build   func(fs *flag.FlagSet) command
}

// command is a built command: its flags are defined on the FlagSet given to build.
type command struct {
	// args names the positional arguments the command requires, e.g. "USER_ID NAME", or
	// takes in brackets, e.g. "[ID]"; values are those given.
	args   string
	values []string
	help   string
	// required names the flags that must be given a value, and check, when set, judges the
	// flags' values against the stores the binary knows: either failing makes the command
	// line a usage error.
	required []string
	check    func(args []string, list stores.List) error
	// bare commands run without the configuration (healthcheck, version): they must work
	// in a container that has none of the service's secrets.
	bare bool
	run  func(ctx context.Context, e env) error
}

// env is what every command gets: the stores it knows, its parsed configuration, its
// positional arguments and where to write.
type env struct {
	// stores are the stores the binary knows (stores.All; a test adds one of its own).
	stores stores.List
	cfg    config.Config
	getenv func(string) string
	// environ lists the names of the variables set (nil: none known), for the warnings
	// about mistyped ones.
	environ func() []string
	args    []string
	log     *slog.Logger
	stdout  io.Writer
	stderr  io.Writer
	// devEnvLooked is where .env.development was looked for and not found ("" if it was
	// found or not wanted): serve says so.
	devEnvLooked string
	// listener, when set, is where serve serves instead of listening on ADDR: tests pass
	// one they opened, so that no port is picked, closed and hoped to be free still.
	listener net.Listener
}

// errUsage is returned after usage text was printed for --help; it means "exit 0".
var errUsage = errors.New("usage printed")

// errNo is a command's printed answer "no": exit 1, with nothing more on stderr.
var errNo = errors.New("the answer is no")

// usageError is a command line that cannot be run: its error, then the usage that would
// have helped, exit 2.
type usageError struct {
	err   error
	usage string
}

func (e *usageError) Error() string { return e.err.Error() }

// Run executes one command and returns the process exit code.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return exitCode(run(ctx, args, env{stores: stores.All(), getenv: getenv, environ: processEnviron(getenv), stdout: stdout, stderr: stderr}), stderr)
}

// exitCode prints what err says, if anything, and returns the exit code it means.
func exitCode(err error, stderr io.Writer) int {
	var bad *usageError
	switch {
	case err == nil, errors.Is(err, errUsage):
		return 0
	case errors.Is(err, errNo):
		return 1
	case errors.As(err, &bad):
		fmt.Fprintf(stderr, "tollgate: %s\n\n%s", bad.err, bad.usage)
		return 2
	default:
		fmt.Fprintln(stderr, "tollgate: "+strings.ReplaceAll(err.Error(), "\n", "; "))
		return 1
	}
}

// run runs the command args name in e, which holds the caller's getenv, stdout, stderr
// and listener; the configuration is parsed here.
func run(ctx context.Context, args []string, e env) error {
	if len(args) == 0 {
		return &usageError{errors.New("no command given"), mainUsage()}
	}
	if isHelp(args[0]) {
		return help(e.stdout, args[1:])
	}
	s, rest, err := lookup(args)
	if err != nil {
		if len(args) > 1 && isHelp(args[1]) && len(groupOf(args[0])) > 0 {
			return help(e.stdout, args[:1]) // "plans --help"
		}
		return err
	}
	c, err := parseFlags(s, rest, e)
	if err != nil {
		return err
	}
	e.args = c.values
	if c.bare {
		return c.run(ctx, e)
	}
	if err := loadConfig(&e); err != nil {
		return err
	}
	return c.run(ctx, e)
}

func isHelp(arg string) bool {
	return arg == "help" || arg == "-h" || arg == "--help" || arg == "-help"
}

// lookup finds the command that args name and the arguments left for it.
func lookup(args []string) (spec, []string, error) {
	for _, s := range commands() {
		words := strings.Fields(s.name)
		if s.build != nil && len(args) >= len(words) && strings.Join(args[:len(words)], " ") == s.name {
			return s, args[len(words):], nil
		}
	}
	if group := groupOf(args[0]); len(group) > 0 {
		if len(args) == 1 {
			return spec{}, nil, &usageError{fmt.Errorf("%s: which command?", args[0]), groupUsage(args[0], group)}
		}
		return spec{}, nil, &usageError{fmt.Errorf("unknown command %q", args[0]+" "+args[1]), groupUsage(args[0], group)}
	}
	return spec{}, nil, &usageError{fmt.Errorf("unknown command %q", strings.Join(args, " ")), mainUsage()}
}

// parseFlags builds a command and parses its flags; --help prints its usage (errUsage).
func parseFlags(s spec, args []string, e env) (command, error) {
	fs := flag.NewFlagSet(s.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed once, by Run, followed by the usage
	c := s.build(fs)
	bad := func(err error) (command, error) {
		return c, &usageError{fmt.Errorf("%s: %w", s.name, err), commandUsage(s, c, fs)}
	}
	// Flags may come before, between or after the positional arguments ("users show ID --json").
	for rest := args; ; rest = fs.Args()[1:] {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(e.stdout, commandUsage(s, c, fs))
				return c, errUsage
			}
			return bad(settingAsFlag(err))
		}
		if fs.NArg() == 0 {
			break
		}
		c.values = append(c.values, fs.Arg(0))
	}
	for _, name := range c.required {
		if f := fs.Lookup(name); f != nil && f.Value.String() == "" {
			return bad(fmt.Errorf("--%s is required", name))
		}
	}
	want := len(strings.Fields(c.args))
	optional := strings.HasPrefix(c.args, "[") // such as "[ID]"
	if len(c.values) > want || (!optional && len(c.values) != want) {
		if want == 0 {
			return bad(fmt.Errorf("unexpected argument %q", c.values[0]))
		}
		return bad(fmt.Errorf("want %s", c.args))
	}
	if c.check != nil {
		if err := c.check(c.values, e.stores); err != nil {
			return bad(err)
		}
	}
	return c, nil
}

// settingAsFlag is err, or for an unknown flag that names a variable (--port, --database-url)
// a sentence that says settings come from the environment and which variable to set. The
// flag's value is not repeated: it may be a password in a URL.
func settingAsFlag(err error) error {
	flagName, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return err
	}
	flagName = strings.TrimLeft(flagName, "-")
	name := strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
	if !config.IsVariable(name) {
		return err
	}
	also := ""
	if name == "PORT" || name == "ADDR" {
		also = " (or ADDR=host:port)"
	}
	return fmt.Errorf("--%s: tollgate takes its settings from the environment, not from flags: set %s%s, as in %s=… tollgate …", flagName, name, also, name)
}

// loadConfig parses the configuration into e, with .env.development under it in
// development, and logs a warning for every variable set that looks like a mistyped name
// of tollgate's (config.NearMisses): ignored, it would leave its setting at the default.
func loadConfig(e *env) error {
	getenv, fileNames, looked, err := withDevEnvFile(e.getenv)
	if err != nil {
		return err
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return fmt.Errorf("configuration: %w%s", err, devEnvMissing(looked))
	}
	e.getenv, e.cfg, e.devEnvLooked = getenv, cfg, looked
	e.log = newLogger(cfg, e.stderr)
	var set []string
	if e.environ != nil {
		set = e.environ()
	}
	for _, warning := range config.NearMisses(append(set, fileNames...)) {
		e.log.Warn(warning)
	}
	return nil
}

// processEnviron is the names of the process's variables that getenv sees set: what a
// caller's getenv over the process environment holds.
func processEnviron(getenv func(string) string) func() []string {
	return func() []string {
		var set []string
		for _, kv := range os.Environ() {
			if name, _, _ := strings.Cut(kv, "="); getenv(name) != "" {
				set = append(set, name)
			}
		}
		return set
	}
}

// devEnvMissing is what to add to a configuration error when .env.development was looked
// for at looked and not found: the likely cause and its fix.
func devEnvMissing(looked string) string {
	if looked == "" {
		return ""
	}
	return fmt.Sprintf(" (no %s at %s: run tollgate from the repository root for the development defaults, or set these variables)", DevEnvFile, looked)
}

// withDevEnvFile layers DevEnvFile under the real environment when APP_ENV is unset or
// development. Variables already set always win. When the file is not there, looked is
// where it was looked for: a clone run from another directory would otherwise just miss
// its settings.
func withDevEnvFile(getenv func(string) string) (_ func(string) string, names []string, looked string, _ error) {
	if appEnv := getenv("APP_ENV"); appEnv != "" && appEnv != config.Development {
		return getenv, nil, "", nil
	}
	f, err := os.Open(DevEnvFile)
	if errors.Is(err, os.ErrNotExist) {
		abs, _ := filepath.Abs(DevEnvFile)
		return getenv, nil, abs, nil
	}
	if err != nil {
		return nil, nil, "", err
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
			return nil, nil, "", fmt.Errorf("%s line %d: want KEY=VALUE", DevEnvFile, n)
		}
		file[strings.TrimSpace(key)] = strings.Trim(strings.TrimSpace(value), `"'`)
	}
	if err := scanner.Err(); err != nil {
		return nil, nil, "", err
	}
	return func(key string) string {
		if v := getenv(key); v != "" {
			return v
		}
		return file[key]
	}, slices.Collect(maps.Keys(file)), "", nil
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(requestIDHandler{h})
}
