package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/stores"
)

func cmdBillingBackfill(fs *flag.FlagSet) command {
	var opts pipeline.BackfillOptions
	var query stores.ListQuery
	var since string
	fs.BoolVar(&opts.DryRun, "dry-run", false, "print what would change for each subscription and write nothing")
	fs.StringVar(&since, "since", "", "only subscriptions created at or after this time (RFC 3339, or a date such as 2026-01-31)")
	fs.StringVar(&query.Customer, "customer", "", "only this web customer's subscriptions (cus_…)")
	fs.BoolVar(&opts.Restart, "restart", false, "start from the newest subscription, forgetting where an interrupted run stopped")
	return command{
		args: "PROVIDER",
		help: `Reads every subscription of the web provider's account from its API (WEB_API_KEY; a
restricted key with read access to Subscriptions is enough) and brings tollgate's state in
line: each one is mapped as a webhook would be, as its state at the time of the read. A
newer webhook event always wins. Run it when connecting an account that has subscriptions
already, or after losing deliveries past the provider's retry window. Running it again
changes nothing. PROVIDER is web, or paddle (PADDLE_API_KEY): the other stores' APIs list
no subscriptions.

Progress goes to stderr. An interrupted run (Ctrl-C stops after the page in hand) resumes
where it stopped when the same command is run again.`,
		check: func(args []string, list stores.List) error {
			if s, ok := list.ByName(args[0]); !ok || s.API == nil || !s.API.Lists {
				return fmt.Errorf("only %s can be backfilled, got %q (no other store's API lists its subscriptions)", oneOf(listing(list)), args[0])
			}
			if since != "" {
				t, err := parseSince(since)
				if err != nil {
					return err
				}
				query.CreatedSince = t
			}
			return nil
		},
		run: func(ctx context.Context, e env) error {
			provider := e.args[0]
			if store, _ := e.stores.ByName(provider); !store.API.On(e.cfg) {
				return errors.New(store.API.Needs)
			}
			d, err := openDB(ctx, e)
			if err != nil {
				return err
			}
			defer d.Close()
			bar := newProgressLine(e.stderr, "backfill "+provider, query.CreatedSince)
			opts.Scope = query.Scope()
			b, err := newBilling(d, e, nil)
			if err != nil {
				return err
			}
			reading, err := b.reading(provider, bar.waiting)
			if err != nil {
				return err
			}
			sum, err := b.pipeline.Backfill(ctx, provider, reading.List(query), opts, func(c pipeline.BackfillChange) {
				if opts.DryRun {
					printBackfillChange(e.stdout, c)
				}
			}, bar.update)
			bar.done()
			printBackfillSummary(e.stdout, provider, sum, opts.DryRun)
			switch {
			case err != nil:
				if sum.Cursor != "" && !opts.DryRun {
					return fmt.Errorf("%w; run the same command again to resume after %s", err, sum.Cursor)
				}
				return err
			case sum.Interrupted && (opts.DryRun || sum.Cursor == ""):
				return errors.New("interrupted; nothing to resume from")
			case sum.Interrupted:
				return fmt.Errorf("interrupted after %s; run the same command again to resume there", sum.Cursor)
			}
			return nil
		},
	}
}

// parseSince reads --since: an RFC 3339 time, or a date (midnight UTC).
func parseSince(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since: want an RFC 3339 time such as 2026-01-31T00:00:00Z or a date such as 2026-01-31, got %q", s)
}

// printBackfillChange writes a dry run's line for one subscription.
func printBackfillChange(w io.Writer, c pipeline.BackfillChange) {
	var what string
	var parts []string
	switch b, a := c.Before, c.After; c.Outcome {
	case pipeline.BackfillCreated:
		what = "would create: "
		parts = append(parts, a.Status, "period end "+periodEnd(a.PeriodEnd), "plan "+a.Plan, "user "+a.UserID)
	case pipeline.BackfillUpdated:
		what = "would update: "
		changed := func(name, from, to string) {
			if from != to {
				parts = append(parts, fmt.Sprintf("%s %s → %s", name, from, to))
			}
		}
		changed("status", b.Status, a.Status)
		changed("period end", periodEnd(b.PeriodEnd), periodEnd(a.PeriodEnd))
		changed("plan", b.Plan, a.Plan)
		changed("user", b.UserID, a.UserID)
	case pipeline.BackfillUnchanged:
		what = "unchanged"
		if c.NewerEvent {
			what += " (a newer webhook event is stored and stands)"
		}
	case pipeline.BackfillUnresolved:
		what = "unresolved: " + c.Reason
	}
	if c.LinkedUser != "" {
		parts = append(parts, fmt.Sprintf("link customer %s → user %s", c.CustomerID, c.LinkedUser))
	}
	fmt.Fprintf(w, "%s  %s%s\n", c.SubscriptionID, what, strings.Join(parts, ", "))
}

func periodEnd(t *time.Time) string {
	if t == nil {
		return "none"
	}
	return t.UTC().Format(time.RFC3339)
}

// printBackfillSummary writes what a run did, or in a dry run would do, and the
// subscriptions left unresolved.
func printBackfillSummary(w io.Writer, provider string, sum pipeline.BackfillSummary, dryRun bool) {
	if sum.ResumedAfter != "" {
		fmt.Fprintf(w, "resumed after %s (%d subscription(s) done before)\n", sum.ResumedAfter, sum.ResumedDone)
	}
	verb := ""
	if dryRun {
		verb = "dry run, nothing written: would be "
	}
	fmt.Fprintf(w, "backfill %s: %d subscription(s) in %d page(s): %s%d created, %d updated, %d unchanged, %d unresolved\n",
		provider, sum.Seen, sum.Pages, verb, sum.Created, sum.Updated, sum.Unchanged, sum.Unresolved)
	if len(sum.UnresolvedIDs) > 0 && !dryRun {
		fmt.Fprintln(w, "unresolved (link the customer or map the price, then run again; --customer narrows the run):")
		for _, line := range sum.UnresolvedIDs {
			fmt.Fprintln(w, "  "+line)
		}
	}
}

// listing are the stores whose API lists their subscriptions.
func listing(list stores.List) []string {
	return list.NamesWhere(func(s stores.Store) bool { return s.API != nil && s.API.Lists })
}
