package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

func cmdReconcile(fs *flag.FlagSet) command {
	var dryRun bool
	fs.BoolVar(&dryRun, "dry-run", false, "report the drift and repair nothing")
	return command{
		help: `Runs one reconcile pass by hand: reads every subscription of the web provider's account
(WEB_API_KEY), any status, and repairs what differs from tollgate's state (drift), as serve
does every RECONCILE_INTERVAL. A newer stored webhook always wins. It prints the counts; each
drifted subscription, before → after, is logged and shown by "tollgate reconcile status".
Only one process reconciles at a time: while another does, this says so and exits 1. A
pass cut short (SIGINT, SIGTERM) is recorded as interrupted and exits 1; the next pass
resumes where it stopped.`,
		run: func(ctx context.Context, e env) error {
			if e.cfg.WebAPIKey == "" {
				return errors.New("WEB_API_KEY: is required to read the web provider's subscriptions (a secret key, or a restricted key with Subscriptions: Read)")
			}
			d, err := openDB(ctx, e, e.cfg.AutoMigrate)
			if err != nil {
				return err
			}
			defer d.Close()
			b, err := newBilling(d, e, nil)
			if err != nil {
				return err
			}
			res, err := newReconciler(d, e, b, nil).Pass(ctx, dryRun)
			if errors.Is(err, reconcile.ErrBusy) {
				return errors.New("another process is reconciling the web provider now; try again when it is done")
			}
			verb := "repaired"
			if dryRun {
				verb = "would repair"
			}
			fmt.Fprintf(e.stdout, "reconcile web: %d checked, %d drifted (%s %d), %d unresolved\n", res.Checked, res.Drifted, verb, res.Drifted, res.Unresolved)
			if errors.Is(err, reconcile.ErrInterrupted) {
				return errors.New("interrupted: the pass stopped after the subscriptions counted above; the next pass resumes where it stopped")
			}
			return err
		},
	}
}

func cmdReconcileStatus(fs *flag.FlagSet) command {
	limit := fs.Int("limit", 5, "show this many of the latest passes")
	return command{
		help: "Shows the latest reconcile passes: when, how many subscriptions were checked, drifted,\nrepaired and unresolved, and each drifted subscription, before → after.",
		run: func(ctx context.Context, e env) error {
			d, err := openDB(ctx, e, false)
			if err != nil {
				return err
			}
			defer d.Close()
			runs, err := dbq.New(d).ListReconcileRuns(ctx, int32(max(*limit, 1)))
			if err != nil {
				return err
			}
			if len(runs) == 0 {
				fmt.Fprintln(e.stdout, "no reconcile pass has run yet")
			}
			for _, r := range runs {
				state := "running"
				switch {
				case r.Interrupted:
					state = "interrupted " + r.FinishedAt.Time.UTC().Format(time.RFC3339)
				case r.FinishedAt.Valid:
					state = "finished " + r.FinishedAt.Time.UTC().Format(time.RFC3339)
				}
				dry := ""
				if r.DryRun {
					dry = " (dry run)"
				}
				fmt.Fprintf(e.stdout, "%s pass%s, started %s, %s: %d checked, %d drifted, %d repaired, %d unresolved\n",
					r.Provider, dry, r.StartedAt.UTC().Format(time.RFC3339), state, r.Checked, r.Drifted, r.Repaired, r.Unresolved)
				if r.Error.Valid {
					fmt.Fprintf(e.stdout, "  failed: %s\n", r.Error.String)
				}
				for _, line := range strings.Split(strings.TrimSpace(r.Drift), "\n") {
					if line != "" {
						fmt.Fprintf(e.stdout, "  %s\n", line)
					}
				}
			}
			return nil
		},
	}
}

// newReconciler is the web provider's reconciler: its API read at RECONCILE_PACE requests a
// second, backing off on 429 as every read of it does.
func newReconciler(d *db.DB, e env, b *billingParts, reg prometheus.Registerer) *reconcile.Reconciler {
	pace := rate.NewLimiter(rate.Limit(e.cfg.Reconcile.Pace), 1)
	pages := backfillPages(webAPI(e.cfg, nil), stripe.SubscriptionQuery{})
	read := func(ctx context.Context, after string) (pipeline.Page, error) {
		if err := pace.Wait(ctx); err != nil {
			return pipeline.Page{}, err
		}
		return pages(ctx, after)
	}
	return reconcile.New(d, b.pipeline, e.log, reconcile.Options{Provider: billing.ProviderWeb, Read: read, Registerer: reg})
}
