package app

import (
	"context"
	"flag"
	"fmt"
	"time"
)

func cmdEntitlementsCheck(*flag.FlagSet) command {
	return command{
		args: "USER_ID NAME",
		help: "Prints whether the user is entitled to NAME now, with the plan and, for a metered\nentitlement, the limit and this period's usage. Exits 0 when entitled, 1 when not:\nthe same answer /api/v1/me gives.",
		run: func(ctx context.Context, e env) error {
			return withUser(ctx, e, func(userID string, b *billingParts) error {
				return checkEntitlement(ctx, e, b, userID, e.args[1])
			})
		},
	}
}

// checkEntitlement prints whether userID is entitled to name, and is errNo when not.
func checkEntitlement(ctx context.Context, e env, b *billingParts, userID, name string) error {
	view, err := b.reader.View(ctx, userID)
	if err != nil {
		return err
	}
	plan := "no plan"
	if view.Plan != nil {
		plan = "plan " + view.Plan.Key
	}
	entitled, answer := view.Entitled(name), "not entitled"
	if entitled {
		answer = "entitled"
	}
	fmt.Fprintf(e.stdout, "%s: %s to %s (%s", userID, answer, name, plan)
	if view.Status != nil {
		fmt.Fprintf(e.stdout, ", %s", *view.Status)
	}
	if u, ok := view.Usage[name]; ok {
		fmt.Fprintf(e.stdout, "; used %d of %d until %s", u.Used, u.Limit, u.PeriodEnd.Format(time.RFC3339))
	}
	fmt.Fprintln(e.stdout, ")")
	if !entitled {
		return errNo
	}
	return nil
}
