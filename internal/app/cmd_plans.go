package app

import (
	"context"
	"flag"
	"fmt"

	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/db"
)

func cmdPlansSync(*flag.FlagSet) command {
	return command{
		help: "Reconciles the plans file (PLANS_FILE) into the database and prints each change.\nRunning it twice changes nothing the second time.",
		run: func(ctx context.Context, e env) error {
			list, err := plans.LoadPlans(e.cfg.PlansFile)
			if err != nil {
				return err
			}
			return withBilling(ctx, e, func(d *db.DB, b *billingParts) error {
				changes, err := b.syncPlans(ctx, d, list)
				if err != nil {
					recordByHand(ctx, e, d, "plans sync", e.cfg.PlansFile, "", "failed: "+err.Error())
					return fmt.Errorf("plans sync: %w", err)
				}
				recordByHand(ctx, e, d, "plans sync", e.cfg.PlansFile, "", fmt.Sprintf("%d changes", len(changes)))
				for _, c := range changes {
					fmt.Fprintln(e.stdout, c)
				}
				if len(changes) == 0 {
					fmt.Fprintln(e.stdout, "plans are up to date")
				}
				return nil
			})
		},
	}
}
