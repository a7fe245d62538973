package app

import (
	"context"
	"flag"
	"fmt"
	"os/user"
	"time"

	"github.com/tollgate/tollgate/internal/audit"
	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/db"
)

func cmdAuditList(fs *flag.FlagSet) command {
	userID := fs.String("user", "", "only the actions that concerned this user")
	since := fs.String("since", "30d", "from this time (RFC 3339) or this long ago (30d, 12h)")
	limit := fs.Int("limit", 100, "at most this many, newest first")
	return command{
		help: "Lists the audit log, newest first: every action that changed billing state by hand —\nconsole replays, retries, grants and revocations; grants made or revoked with a service\nkey; the commands that do (plans sync, reconcile, events replay, deliveries retry, keys\ncreate and revoke, grants add and revoke) — with when, who, what, on what, the user it\nconcerned and how it went.",
		run: func(ctx context.Context, e env) error {
			from, err := sinceOrAgo(*since, time.Now())
			if err != nil {
				return fmt.Errorf("--since: %v", err)
			}
			d, err := openDB(ctx, e)
			if err != nil {
				return err
			}
			defer d.Close()
			list, err := audit.List(ctx, d, audit.Filter{Since: from, UserID: *userID, Max: *limit})
			if err != nil {
				return err
			}
			if len(list) == 0 {
				fmt.Fprintln(e.stdout, "no action recorded")
			}
			for _, a := range list {
				user := a.UserID
				if user == "" {
					user = "-"
				}
				fmt.Fprintf(e.stdout, "%s  %s  %s  %s  user %s: %s\n", a.At.Format(time.RFC3339), a.Actor, a.Action, a.Target, user, a.Result)
			}
			return nil
		},
	}
}

// sinceOrAgo reads --since: what parseSince reads, or a duration back from now (Go's
// syntax, or days: 30d).
func sinceOrAgo(s string, now time.Time) (time.Time, error) {
	if t, err := parseSince(s); err == nil {
		return t, nil
	}
	back, err := billing.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want an RFC 3339 time, a date or a duration such as 30d or 12h, got %q", s)
	}
	return now.Add(-back), nil
}

// recordByHand adds what a command did to the audit log, as cli:<OS user>. Failing to
// write it is a warning: the action stands.
func recordByHand(ctx context.Context, e env, d *db.DB, action, target, userID, result string) {
	err := audit.Record(context.WithoutCancel(ctx), d, audit.Entry{
		At: time.Now(), Actor: cliActor(e), Action: action, Target: target, UserID: userID, Result: result,
	})
	if err != nil {
		e.log.Warn("the action is not recorded in the audit log", "action", action, "error", err)
	}
}

// outcome is how an action went, for the audit log: done, or failed and why.
func outcome(err error, done string) string {
	if err != nil {
		return "failed: " + err.Error()
	}
	return done
}

// cliActor is the audit log's name for whoever runs a command: cli and the OS user.
func cliActor(e env) string {
	name := e.getenv("USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	return audit.CLI(name)
}
