package app

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/tollgate/tollgate/internal/billing/reader"
)

func cmdUsersShow(fs *flag.FlagSet) command {
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return command{
		args: "USER_ID",
		help: "Shows what tollgate knows of a user's billing: billing customers, each provider subscription\n(status, period end, plan, last event), the effective plan and entitlements with this period's\nusage (the answer /api/v1/me gives), and the last 10 provider events naming the user.",
		run: func(ctx context.Context, e env) error {
			return withUser(ctx, e, func(userID string, b *billingParts) error {
				report, err := b.reader.Inspect(ctx, userID)
				if err != nil {
					return err
				}
				if asJSON {
					enc := json.NewEncoder(e.stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(report)
				}
				printReport(e.stdout, report, time.Now(), e.stores.TypeNote)
				return nil
			})
		},
	}
}

// printReport writes a user report for people.
// The status is as people are shown it at now: lapsed, not active, once a period has ended
// unrenewed (the JSON keeps the /api/v1/me answer as it is).
// An event type a store numbers carries its number beside it (typeNote).
func printReport(w io.Writer, r reader.UserReport, now time.Time, typeNote func(provider, eventType string) string) {
	orNone := func(s *string) string {
		if s == nil {
			return "-"
		}
		return *s
	}
	date := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.Format(time.RFC3339)
	}
	fmt.Fprintf(w, "user %s\n\ncustomers:\n", r.UserID)
	if len(r.Customers) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, c := range r.Customers {
		fmt.Fprintf(w, "  #%d  web customer %s  since %s\n", c.ID, orNone(c.WebCustomerID), c.CreatedAt.Format(time.RFC3339))
	}
	fmt.Fprintln(w, "\nsubscriptions:")
	if len(r.Subscriptions) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, s := range r.Subscriptions {
		until := "until"
		if s.CurrentPeriodEnd != nil && !s.CurrentPeriodEnd.After(now) {
			until = "period ended"
		}
		fmt.Fprintf(w, "  %-6s %s  %s %s %s  plan %s  last %s at %s\n", s.Provider, s.ID, s.Status, until, date(s.CurrentPeriodEnd),
			s.Plan, orNone(s.LastEventType), date(s.LastEventAt))
	}
	b := r.Billing
	plan := "none"
	if b.Plan != nil {
		plan = b.Plan.Key
	}
	status := cmp.Or(b.StatusShown(now), "-")
	fmt.Fprintf(w, "\nbilling: plan %s, subscribed %t, status %s, provider %s, period end %s\nentitlements:\n",
		plan, b.Subscribed, status, orNone(b.Provider), date(b.CurrentPeriodEnd))
	names := slices.Sorted(maps.Keys(b.Entitlements))
	if len(names) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, name := range names {
		fmt.Fprintf(w, "  %s: %v", name, b.Entitlements[name])
		if u, ok := b.Usage[name]; ok {
			fmt.Fprintf(w, "  (used %d of %d until %s)", u.Used, u.Limit, u.PeriodEnd.Format(time.RFC3339))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "\nrecent events:")
	if len(r.RecentEvents) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, ev := range r.RecentEvents {
		state := "not processed yet"
		if ev.Outcome != nil {
			state = *ev.Outcome + " " + date(ev.ProcessedAt)
		}
		if ev.ProcessingError != nil {
			state += ": " + *ev.ProcessingError
		}
		kind := ev.Type
		if n := typeNote(ev.Provider, ev.Type); n != "" {
			kind += " (" + n + ")"
		}
		fmt.Fprintf(w, "  %s  %-6s %s  %s  %s\n", ev.ReceivedAt.Format(time.RFC3339), ev.Provider, ev.ID, kind, state)
	}
}
