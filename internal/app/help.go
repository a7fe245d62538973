package app

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// help prints the usage of tollgate (no topic), of a group ("plans") or of a command
// ("plans sync") to stdout.
func help(stdout io.Writer, topic []string) error {
	if len(topic) == 0 || len(topic) == 1 && isHelp(topic[0]) {
		fmt.Fprint(stdout, mainUsage())
		return nil
	}
	name := strings.Join(topic, " ")
	for _, s := range commands() {
		if s.name == name && s.build != nil {
			fs := flag.NewFlagSet(s.name, flag.ContinueOnError)
			fmt.Fprint(stdout, commandUsage(s, s.build(fs), fs))
			return nil
		}
	}
	if group := groupOf(name); len(group) > 0 {
		fmt.Fprint(stdout, groupUsage(name, group))
		return nil
	}
	return &usageError{fmt.Errorf("no help for %q: it is not a command", name), mainUsage()}
}

func mainUsage() string {
	var b strings.Builder
	b.WriteString("tollgate — sign-in forms, a token-guarded API and billing webhooks in one binary.\n\nUsage:\n  tollgate COMMAND [flags]\n\nCommands:\n")
	listCommands(&b, commands())
	b.WriteString("\nConfiguration comes from the environment (see README.md).\n" +
		"\"tollgate help COMMAND\" or \"tollgate COMMAND --help\" describes a command.\n")
	return b.String()
}

// groupOf lists the commands of a group: "keys" → keys create, keys list, keys revoke. A
// command named as its group ("reconcile", beside "reconcile status") is one of them.
func groupOf(group string) []spec {
	var out []spec
	var same *spec
	for _, s := range commands() {
		switch {
		case strings.HasPrefix(s.name, group+" "):
			out = append(out, s)
		case s.name == group && s.build != nil:
			same = &s
		}
	}
	if same != nil && len(out) > 0 {
		out = append([]spec{*same}, out...)
	}
	return out
}

// groupNotes are what a group's usage says beside its commands.
var groupNotes = map[string]string{
	"keys": "Service keys (tgk_…) let trusted backends call the service API. tollgate's own signing keys,\n" +
		"which sign entitlement tokens, are another thing: see \"tollgate help signing-keys\".",
	"signing-keys": signingKeysNote,
}

func groupUsage(group string, specs []spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage:\n  tollgate %s COMMAND [flags]\n\nCommands:\n", group)
	listCommands(&b, specs)
	if note := groupNotes[group]; note != "" {
		fmt.Fprintf(&b, "\n%s\n", note)
	}
	fmt.Fprintf(&b, "\n\"tollgate help %s COMMAND\" describes a command.\n", group)
	return b.String()
}

func listCommands(b *strings.Builder, specs []spec) {
	for _, s := range specs {
		fmt.Fprintf(b, "  %-20s %s\n", s.name, s.summary)
	}
}

// commandUsage is a command's synopsis, description and flags.
func commandUsage(s spec, c command, fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: tollgate %s\n\n%s\n", strings.TrimSpace(s.name+" "+flagsHint(fs)+c.args), c.help)
	if flagsHint(fs) != "" {
		b.WriteString("\nFlags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return b.String()
}

func flagsHint(fs *flag.FlagSet) string {
	has := false
	fs.VisitAll(func(*flag.Flag) { has = true })
	if has {
		return "[flags] "
	}
	return ""
}
