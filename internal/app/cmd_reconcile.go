package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/stores"
)

func cmdReconcile(fs *flag.FlagSet) command {
	var dryRun bool
	var provider, since string
	fs.BoolVar(&dryRun, "dry-run", false, "report the drift and repair nothing")
	fs.StringVar(&provider, "provider", "", "only this provider: "+oneOf(reconcilable(stores.All()))+" (default: every one whose API settings are set)")
	fs.StringVar(&since, "since", "", "read the stores' histories from this long ago (30d, 12h), not from where the last read ended")
	return command{
		help: `Runs one reconcile pass by hand, as serve does every RECONCILE_INTERVAL, for each provider
whose API settings are set (or the one --provider names):

  web        reads every subscription of the web provider's account (WEB_API_KEY), any
             status, and repairs what differs from tollgate's state (drift). A newer stored
             webhook always wins.
  appstore   reads Apple's notification history (APPSTORE_KEY_ID, APPSTORE_ISSUER_ID,
             APPSTORE_PRIVATE_KEY_FILE) from ten minutes before the end of the last complete
             read, or --since ago — never further back than Apple keeps (180 days, 30 in
             Sandbox, less an hour), saying so — and applies every notification tollgate
             has not stored, as if delivered, page by page; then reads the status of each
             App Store subscription tollgate knows and repairs drift.
  playstore  reads Google Play's voided purchases (PLAY_SERVICE_ACCOUNT_JSON) from where the
             last read ended, or --since ago (30 days back at most, less an hour: all
             Google keeps), and applies each void tollgate has not stored; then reads each
             Google Play subscription tollgate knows (subscriptionsv2) and repairs drift.
  paddle     reads every subscription of the Paddle account (PADDLE_API_KEY), page by
             page, and repairs drift as for web.

A history read cut short resumes at the page where it stopped. A subscription whose read
keeps failing is counted failed and read again by the next pass; a pass fails only when the
store refuses tollgate's settings, or every read fails.

Each drifted subscription, before → after, is logged and shown by "tollgate reconcile
status". --dry-run lists what would be applied and repaired, and applies nothing. Only one
process reconciles a provider at a time: while another does, this says so and exits 1. A
pass cut short (SIGINT, SIGTERM) is recorded as interrupted and exits 1; the next resumes
where it stopped.`,
		run: func(ctx context.Context, e env) error {
			named, err := reconcileProviders(e, provider)
			if err != nil {
				return err
			}
			var back time.Duration
			if since != "" {
				if back, err = billing.ParseDuration(since); err != nil {
					return fmt.Errorf("--since: %v", err)
				}
			}
			return withBilling(ctx, e, func(d *db.DB, b *billingParts) error {
				syncs, err := storeSyncs(d, e, b, nil)
				if err != nil {
					return err
				}
				for _, s := range syncs {
					if slices.Contains(named, s.provider) {
						if err := s.byHand(ctx, e, d, back, dryRun); err != nil {
							return err
						}
					}
				}
				return nil
			})
		},
	}
}

// reconcileProviders are the providers a reconcile pass by hand reads: the one named, or
// every one whose API settings are set (less those read only when named).
func reconcileProviders(e env, named string) ([]string, error) {
	if named != "" {
		s, ok := e.stores.ByName(named)
		switch {
		case !ok || s.API == nil:
			return nil, fmt.Errorf("--provider: want %s, got %q", oneOf(reconcilable(e.stores)), named)
		case !s.On(e.cfg) || !s.API.On(e.cfg):
			return nil, errors.New(s.API.Needs)
		}
		return []string{named}, nil
	}
	var on, standIns, needs []string
	for _, s := range e.stores {
		if s.API == nil {
			continue
		}
		needs = append(needs, s.API.Needs)
		switch {
		case !s.On(e.cfg) || !s.API.On(e.cfg):
		case s.API.OnlyNamed != nil && s.API.OnlyNamed(e.cfg):
			standIns = append(standIns, s.Name) // a development stand-in, inside a running serve
		default:
			on = append(on, s.Name)
		}
	}
	if len(on) > 0 {
		return on, nil
	}
	if len(standIns) > 0 {
		var commands []string
		for _, name := range standIns {
			commands = append(commands, "tollgate reconcile --provider "+name)
		}
		return nil, fmt.Errorf("no store's own API is configured, but the development stand-in for %s can be reconciled while serve runs: %s. "+
			"To reconcile a real store: %s", strings.Join(standIns, " and "), strings.Join(commands, ", or "), strings.Join(needs, "; "))
	}
	return nil, fmt.Errorf("no provider's API is configured. %s", strings.Join(needs, "; "))
}

// reconcilable are the stores whose API tollgate reads.
func reconcilable(list stores.List) []string {
	return list.NamesWhere(func(s stores.Store) bool { return s.API != nil })
}

// passDone prints a pass's summary line, records the pass in the audit log (a dry run
// changes nothing, and is not recorded) and words its failure.
func passDone(ctx context.Context, e env, d *db.DB, provider string, res reconcile.Result, err error, dryRun bool) error {
	verb := "repaired"
	if dryRun {
		verb = "would repair"
	}
	summary := fmt.Sprintf("%d checked, %d drifted (%s %d), %d unresolved, %d failed", res.Checked, res.Drifted, verb, res.Drifted, res.Unresolved, res.Failed)
	fmt.Fprintf(e.stdout, "reconcile %s: %s\n", provider, summary)
	for _, line := range strings.Split(res.Notes, "\n") {
		if line != "" {
			fmt.Fprintf(e.stdout, "  note: %s\n", line)
		}
	}
	if !dryRun && !errors.Is(err, reconcile.ErrBusy) {
		recordByHand(ctx, e, d, "reconcile", provider, "", outcome(err, summary))
	}
	if errors.Is(err, reconcile.ErrInterrupted) {
		return errors.New("interrupted: the pass stopped after the subscriptions counted above; the next pass resumes where it stopped")
	}
	return err
}

// byHand catches up on each of the store's histories, listing each item it applies (or
// would), then runs a pass over the store's subscriptions.
func (s *storeSync) byHand(ctx context.Context, e env, d *db.DB, back time.Duration, dryRun bool) error {
	var since time.Time
	if back > 0 {
		since = time.Now().Add(-back)
	}
	for _, h := range s.histories {
		label := s.provider + " " + h.Environment()
		line := newCatchUpLine(e.stderr, label)
		sum, err := h.CatchUp(ctx, since, pipeline.CatchUpOptions{DryRun: dryRun, Progress: line.update, Report: func(id, outcome string) {
			if outcome != billing.OutcomeDuplicate {
				fmt.Fprintf(e.stdout, "%s %s\n", id, outcome)
			}
		}})
		line.done()
		if errors.Is(err, reconcile.ErrBusy) {
			return fmt.Errorf("another process is reading the %s history now; try again when it is done", label)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		verb := "applied"
		if dryRun {
			verb = "would apply"
		}
		fmt.Fprintf(e.stdout, "reconcile %s: %d pages, %d %s read, %s %d, %d already stored, %d refused\n",
			label, sum.Pages, sum.Read, s.noun, verb, sum.Applied, sum.Stored, sum.Refused)
	}
	res, err := s.reconciler.Pass(ctx, dryRun)
	if errors.Is(err, reconcile.ErrBusy) {
		return fmt.Errorf("another process is reconciling %s now; try again when it is done", s.provider)
	}
	return passDone(ctx, e, d, s.provider, res, err, dryRun)
}

func cmdReconcileStatus(fs *flag.FlagSet) command {
	limit := fs.Int("limit", 5, "show this many of the latest passes")
	return command{
		help: `Shows the latest reconcile passes: when, how many subscriptions were checked, drifted,
repaired, unresolved and failed (not read: the next pass reads them again), each drifted
subscription, before → after, and what the pass noted (a store environment that refused
the key). A pass whose process died shows as interrupted once its lease has run out.
Then each store history: up to when tollgate holds every notification, and from when
its latest read read, and why when that is later than it wanted.`,
		run: func(ctx context.Context, e env) error {
			d, err := openDB(ctx, e)
			if err != nil {
				return err
			}
			defer d.Close()
			q := dbq.New(d)
			runs, err := q.ListReconcileRuns(ctx, int32(max(*limit, 1)))
			if err != nil {
				return err
			}
			if len(runs) == 0 {
				fmt.Fprintln(e.stdout, "no reconcile pass has run yet")
			}
			for _, r := range runs {
				state, err := runState(ctx, q, r)
				if err != nil {
					return err
				}
				printRun(e, r, state)
			}
			return printHistories(ctx, e, q)
		},
	}
}

// runState is how a pass stands: finished, interrupted, or running while its provider's
// lease is held — unfinished without one, its process died.
func runState(ctx context.Context, q *dbq.Queries, r dbq.ListReconcileRunsRow) (string, error) {
	switch {
	case r.Interrupted:
		return "interrupted " + r.FinishedAt.Time.UTC().Format(time.RFC3339), nil
	case r.FinishedAt.Valid:
		return "finished " + r.FinishedAt.Time.UTC().Format(time.RFC3339), nil
	}
	held, err := q.ReconcileLeaseHeld(ctx, dbq.ReconcileLeaseHeldParams{Provider: r.Provider, Now: time.Now().UTC()})
	if err != nil || held > 0 {
		return "running", err
	}
	return "interrupted (its process stopped; the next pass resumes it)", nil
}

func printRun(e env, r dbq.ListReconcileRunsRow, state string) {
	dry := ""
	if r.DryRun {
		dry = " (dry run)"
	}
	fmt.Fprintf(e.stdout, "%s pass%s, started %s, %s: %d checked, %d drifted, %d repaired, %d unresolved, %d failed\n",
		r.Provider, dry, r.StartedAt.UTC().Format(time.RFC3339), state, r.Checked, r.Drifted, r.Repaired, r.Unresolved, r.Failed)
	if r.Error.Valid {
		fmt.Fprintf(e.stdout, "  failed: %s\n", r.Error.String)
	}
	for _, line := range strings.Split(strings.TrimSpace(r.Notes), "\n") {
		if line != "" {
			fmt.Fprintf(e.stdout, "  note: %s\n", line)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(r.Drift), "\n") {
		if line != "" {
			fmt.Fprintf(e.stdout, "  %s\n", line)
		}
	}
}

// printHistories shows each store history's latest read.
func printHistories(ctx context.Context, e env, q *dbq.Queries) error {
	reads, err := q.ListHistoryReads(ctx)
	if err != nil {
		return err
	}
	for _, r := range reads {
		held := "nothing complete yet"
		if r.CompleteUntil.Valid {
			held = "complete until " + r.CompleteUntil.Time.UTC().Format(time.RFC3339)
		}
		state := "the latest read asked for"
		if r.NextPage.Valid {
			state = fmt.Sprintf("a read under way (%d pages applied; the next catch-up resumes it) asks for", r.Pages)
		}
		fmt.Fprintf(e.stdout, "%s history %s: %s; %s %s to %s\n", r.Provider, r.Environment, held, state,
			r.ReadFrom.UTC().Format(time.RFC3339), r.ReadTo.UTC().Format(time.RFC3339))
		if r.Note != "" {
			fmt.Fprintf(e.stdout, "  note: %s\n", r.Note)
		}
	}
	return nil
}
