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
	var provider, since string
	fs.BoolVar(&dryRun, "dry-run", false, "report the drift and repair nothing")
	fs.StringVar(&provider, "provider", "", "only this provider: web or appstore (default: every one whose API settings are set)")
	fs.StringVar(&since, "since", "", "appstore: read Apple's notification history from this long ago (30d, 12h), not from where the last read ended")
	return command{
		help: `Runs one reconcile pass by hand, as serve does every RECONCILE_INTERVAL, for each provider
whose API settings are set (or the one --provider names):

  web       reads every subscription of the web provider's account (WEB_API_KEY), any
            status, and repairs what differs from tollgate's state (drift). A newer stored
            webhook always wins. Each drifted subscription, before → after, is logged and
            shown by "tollgate reconcile status". Only one process reconciles at a time:
            while another does, this says so and exits 1. A pass cut short (SIGINT,
            SIGTERM) is recorded as interrupted and exits 1; the next resumes where it stopped.
  appstore  reads Apple's notification history (APPSTORE_KEY_ID, APPSTORE_ISSUER_ID,
            APPSTORE_PRIVATE_KEY_FILE) from ten minutes before the end of the last complete
            read, or --since ago, and applies every notification tollgate has not stored, as
            if delivered, in the order Apple signed them. --dry-run lists them and applies
            nothing.`,
		run: func(ctx context.Context, e env) error {
			web, appStore, err := reconcileProviders(e, provider)
			if err != nil {
				return err
			}
			var back time.Duration
			if since != "" {
				if back, err = billing.ParseDuration(since); err != nil {
					return fmt.Errorf("--since: %v", err)
				}
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
			if web {
				if err := reconcileWeb(ctx, e, d, b, dryRun); err != nil {
					return err
				}
			}
			if appStore {
				return catchUpAppStore(ctx, e, d, b, back, dryRun)
			}
			return nil
		},
	}
}

// reconcileProviders are the providers a reconcile pass by hand reads: the one named, or
// every one whose API settings are set.
func reconcileProviders(e env, named string) (web, appStore bool, err error) {
	webOn, appStoreOn := e.cfg.WebAPIKey != "", e.cfg.AppStore.APIOn()
	switch named {
	case "":
		if !webOn && !appStoreOn {
			return false, false, errors.New("no provider's API is configured: set WEB_API_KEY for the web provider, or APPSTORE_KEY_ID, APPSTORE_ISSUER_ID and APPSTORE_PRIVATE_KEY_FILE (with APPSTORE_BUNDLE_ID) for the App Store")
		}
		return webOn, appStoreOn, nil
	case billing.ProviderWeb:
		if !webOn {
			return false, false, errors.New("WEB_API_KEY: is required to read the web provider's subscriptions (a secret key, or a restricted key with Subscriptions: Read)")
		}
		return true, false, nil
	case billing.ProviderAppStore:
		if !appStoreOn {
			return false, false, errors.New("APPSTORE_KEY_ID, APPSTORE_ISSUER_ID and APPSTORE_PRIVATE_KEY_FILE (with APPSTORE_BUNDLE_ID): are required to read Apple's notification history")
		}
		return false, true, nil
	}
	return false, false, fmt.Errorf("--provider: want web or appstore, got %q", named)
}

// reconcileWeb is one pass over the web provider's subscriptions.
func reconcileWeb(ctx context.Context, e env, d *db.DB, b *billingParts, dryRun bool) error {
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
}

// catchUpAppStore reads Apple's notification history of each environment and applies what
// tollgate missed, listing each notification it applies (or would).
func catchUpAppStore(ctx context.Context, e env, d *db.DB, b *billingParts, back time.Duration, dryRun bool) error {
	histories, err := storeHistories(d, e, b)
	if err != nil {
		return err
	}
	var since time.Time
	if back > 0 {
		since = time.Now().Add(-back)
	}
	for _, h := range histories {
		line := newCatchUpLine(e.stderr, "appstore "+h.Environment())
		sum, err := h.CatchUp(ctx, since, pipeline.CatchUpOptions{DryRun: dryRun, Progress: line.update, Report: func(id, outcome string) {
			if outcome != billing.OutcomeDuplicate {
				fmt.Fprintf(e.stdout, "%s %s\n", id, outcome)
			}
		}})
		line.done()
		if errors.Is(err, reconcile.ErrBusy) {
			return errors.New("another process is reading the App Store's history now; try again when it is done")
		}
		if err != nil {
			return fmt.Errorf("App Store %s: %w", h.Environment(), err)
		}
		verb := "applied"
		if dryRun {
			verb = "would apply"
		}
		fmt.Fprintf(e.stdout, "reconcile appstore %s: %d pages, %d notifications read, %s %d, %d already stored, %d refused\n",
			h.Environment(), sum.Pages, sum.Read, verb, sum.Applied, sum.Stored, sum.Refused)
	}
	return nil
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
