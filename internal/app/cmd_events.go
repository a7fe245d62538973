package app

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"slices"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/stores"
)

func cmdEventsReplay(fs *flag.FlagSet) command {
	var filter pipeline.ReplayFilter
	var since string
	fs.StringVar(&filter.Provider, "provider", "", "only events of this provider: "+oneOf(replayable(stores.All())))
	fs.StringVar(&since, "since", "", "only events first received at or after this RFC 3339 time")
	fs.StringVar(&filter.EventID, "id", "", "only the event with this provider event id")
	fs.BoolVar(&filter.Unprocessed, "unprocessed", false, "only events not processed yet or stored with a processing error")
	return command{
		help: "Re-runs stored provider_events through the processors. Replaying is idempotent.",
		check: func(_ []string, list stores.List) error {
			if providers := replayable(list); filter.Provider != "" && !slices.Contains(providers, filter.Provider) {
				return fmt.Errorf("--provider: want %s, got %q", oneOf(providers), filter.Provider)
			}
			if since != "" {
				t, err := time.Parse(time.RFC3339, since)
				if err != nil {
					return fmt.Errorf("--since: want an RFC 3339 time such as 2026-11-01T00:00:00Z, got %q", since)
				}
				filter.Since = t
			}
			return nil
		},
		run: func(ctx context.Context, e env) error {
			return withBilling(ctx, e, func(d *db.DB, b *billingParts) error {
				var last dbq.EventUserParams
				n, err := b.pipeline.Replay(ctx, filter, func(provider, eventID, outcome string) {
					fmt.Fprintf(e.stdout, "%s %s: %s\n", provider, eventID, outcome)
					last = dbq.EventUserParams{Provider: provider, ProviderEventID: eventID}
				})
				fmt.Fprintf(e.stdout, "replayed %d event(s)\n", n)
				recordReplay(ctx, e, d, filter, n, last, err)
				return err
			})
		},
	}
}

// recordReplay adds a replay by hand to the audit log: one record for the selection,
// naming the event's user when it replayed one event.
func recordReplay(ctx context.Context, e env, d *db.DB, filter pipeline.ReplayFilter, n int, last dbq.EventUserParams, err error) {
	target := cmp.Or(filter.Provider, "every provider")
	if filter.EventID != "" {
		target += " " + filter.EventID
	}
	user := ""
	if n == 1 {
		u, _ := dbq.New(d).EventUser(ctx, last) // unknown: recorded without one
		user = u.String
	}
	recordByHand(ctx, e, d, "replay", target, user, outcome(err, fmt.Sprintf("%d replayed", n)))
}

// replayable are the providers whose events replay: every store's, and a grant's steps.
func replayable(list stores.List) []string { return append(list.Names(), billing.ProviderGrant) }
