package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/grants"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/stores"
)

func cmdGrantsAdd(fs *flag.FlagSet) command {
	var r grants.Request
	var until, length string
	fs.StringVar(&r.UserID, "user", "", "the identity user's id (required)")
	fs.StringVar(&r.Plan, "plan", "", "the plan's key in the plans file (required)")
	fs.StringVar(&until, "until", "", "when it ends, an RFC 3339 time (or --for)")
	fs.StringVar(&length, "for", "", "how long it lasts from now: 90m, 12h, 30d (or --until)")
	fs.StringVar(&r.Reason, "reason", "", "why, kept with the grant and in the audit log (required)")
	return command{
		required: []string{"user", "plan", "reason"},
		help:     "Grants a user a plan until an end, as provider grant: every answer counts it like a\nsubscription (the best plan wins) until it ends by itself or is revoked. Prints the grant:\nid, user, plan, end, reason.",
		check: func([]string, stores.List) error {
			if (until == "") == (length == "") {
				return errors.New("give the end as --until TIME or --for DURATION, one of them")
			}
			var err error
			if until != "" {
				if r.Until, err = time.Parse(time.RFC3339, until); err != nil {
					return fmt.Errorf("--until: want an RFC 3339 time such as 2026-12-31T00:00:00Z, got %q", until)
				}
			} else if r.For, err = billing.ParseDuration(length); err != nil {
				return fmt.Errorf("--for: %v", err)
			}
			return nil
		},
		run: func(ctx context.Context, e env) error {
			return withGrants(ctx, e, func(g *grants.Grants) error {
				r.By = cliActor(e)
				made, err := g.Add(ctx, r)
				if err != nil {
					return err
				}
				fmt.Fprintln(e.stdout, grantLine(made, time.Now()))
				return nil
			})
		},
	}
}

func cmdGrantsList(fs *flag.FlagSet) command {
	userID := fs.String("user", "", "only this user's grants")
	return command{
		help: "Lists grants, newest first, one line each: id, user, plan, end, reason, and for one that has\nended, how.",
		run: func(ctx context.Context, e env) error {
			return withGrants(ctx, e, func(g *grants.Grants) error {
				list, err := g.List(ctx, *userID)
				if err != nil {
					return err
				}
				if len(list) == 0 {
					fmt.Fprintln(e.stderr, "no grant")
				}
				now := time.Now()
				for _, one := range list {
					fmt.Fprintln(e.stdout, grantLine(one, now))
				}
				return nil
			})
		},
	}
}

func cmdGrantsRevoke(fs *flag.FlagSet) command {
	reason := fs.String("reason", "", "why, kept with the grant and in the audit log (required)")
	return command{
		args:     "ID",
		required: []string{"reason"},
		help:     "Ends the grant ID at once and prints it as ended.",
		run: func(ctx context.Context, e env) error {
			return withGrants(ctx, e, func(g *grants.Grants) error {
				ended, err := g.Revoke(ctx, "", e.args[0], *reason, cliActor(e))
				if err != nil {
					return err
				}
				fmt.Fprintln(e.stdout, grantLine(ended, time.Now()))
				return nil
			})
		},
	}
}

// grantLine is one grant on one line: id, user, plan, end and reason, two spaces apart,
// then how it ended if it has.
func grantLine(g billing.Grant, now time.Time) string {
	line := strings.Join([]string{g.ID, g.UserID, g.Plan, g.End().Format(time.RFC3339), g.Reason}, "  ")
	switch {
	case g.Revoked != nil:
		line += fmt.Sprintf("  [revoked by %s: %s]", g.RevokedBy, g.RevokeReason)
	case g.Status(now) != billing.StatusActive:
		line += "  [ended]"
	}
	return line
}

// withGrants runs fn over the grants of DATABASE_URL (withBilling), explaining billing's
// refusals.
func withGrants(ctx context.Context, e env, fn func(g *grants.Grants) error) error {
	return explained(withBilling(ctx, e, func(_ *db.DB, b *billingParts) error { return fn(b.grants) }))
}

// explained is err with what billing's answer says to do about it, for a person.
func explained(err error) error {
	if be := billing.AsError(err); be != nil {
		return fmt.Errorf("%w: %s", err, be.Detail)
	}
	return err
}
