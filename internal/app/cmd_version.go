package app

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
)

func cmdVersion(*flag.FlagSet) command {
	return command{
		help: "Prints the module version, the source revision it was built from and the Go version.",
		bare: true,
		run: func(_ context.Context, e env) error {
			fmt.Fprintln(e.stdout, version())
			return nil
		},
	}
}

// version describes this build from what the Go toolchain stamped into it: the module
// version ("(devel)" for a build from a checkout) and the VCS revision, time and whether
// the tree had uncommitted changes.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "tollgate (no build information)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	out := "tollgate " + info.Main.Version
	if rev := settings["vcs.revision"]; rev != "" {
		out += " revision " + rev
		if settings["vcs.modified"] == "true" {
			out += " (modified)"
		}
		if at := settings["vcs.time"]; at != "" {
			out += " from " + at
		}
	}
	return out + " " + info.GoVersion
}
