package app

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/servicekeys"
)

func cmdServe(*flag.FlagSet) command {
	return command{
		help: "Runs the HTTP server until SIGINT or SIGTERM, then lets in-flight requests finish.",
		run:  serve,
	}
}

func cmdMigrate(*flag.FlagSet) command {
	return command{
		help: "Applies pending database migrations (DATABASE_URL) and exits.",
		run: func(ctx context.Context, e env) error {
			d, err := openDB(ctx, e, true)
			if err != nil {
				return err
			}
			defer d.Close()
			return nil
		},
	}
}

func cmdPlansSync(*flag.FlagSet) command {
	return command{
		help: "Reconciles the plans file (PLANS_FILE) into the database and prints each change.\nRunning it twice changes nothing the second time.",
		run: func(ctx context.Context, e env) error {
			plans, err := billing.LoadPlans(e.cfg.PlansFile)
			if err != nil {
				return err
			}
			d, err := openDB(ctx, e, e.cfg.AutoMigrate)
			if err != nil {
				return err
			}
			defer d.Close()
			changes, err := newBilling(d, e, nil).SyncPlans(ctx, plans)
			if err != nil {
				return fmt.Errorf("plans sync: %w", err)
			}
			for _, c := range changes {
				fmt.Fprintln(e.stdout, c)
			}
			if len(changes) == 0 {
				fmt.Fprintln(e.stdout, "plans are up to date")
			}
			return nil
		},
	}
}

func cmdEventsReplay(fs *flag.FlagSet) command {
	var filter billing.ReplayFilter
	var since string
	fs.StringVar(&filter.Provider, "provider", "", "only events of this provider: web or mobile")
	fs.StringVar(&since, "since", "", "only events first received at or after this RFC 3339 time")
	fs.StringVar(&filter.EventID, "id", "", "only the event with this provider event id")
	fs.BoolVar(&filter.Unprocessed, "unprocessed", false, "only events not processed yet or stored with a processing error")
	return command{
		help: "Re-runs stored provider_events through the processors. Replaying is idempotent.",
		run: func(ctx context.Context, e env) error {
			if filter.Provider != "" && filter.Provider != billing.ProviderWeb && filter.Provider != billing.ProviderMobile {
				return fmt.Errorf("--provider: want web or mobile, got %q", filter.Provider)
			}
			if since != "" {
				t, err := time.Parse(time.RFC3339, since)
				if err != nil {
					return fmt.Errorf("--since: want an RFC 3339 time such as 2026-11-01T00:00:00Z")
				}
				filter.Since = t
			}
			d, err := openDB(ctx, e, e.cfg.AutoMigrate)
			if err != nil {
				return err
			}
			defer d.Close()
			n, err := newBilling(d, e, nil).Replay(ctx, filter, func(provider, eventID, outcome string) {
				fmt.Fprintf(e.stdout, "%s %s: %s\n", provider, eventID, outcome)
			})
			fmt.Fprintf(e.stdout, "replayed %d event(s)\n", n)
			return err
		},
	}
}

func cmdWebhookSend(fs *flag.FlagSet) command {
	var provider, file, url, header string
	fs.StringVar(&provider, "provider", "", "web or mobile (required)")
	fs.StringVar(&header, "header", "web", "web signature header: web (Web-Signature) or stripe (Stripe-Signature, as Stripe sends it)")
	fs.StringVar(&file, "file", "", "path of the JSON event to send (required)")
	fs.StringVar(&url, "url", "", "endpoint to POST to (default: PUBLIC_URL/BILLING_MOUNT/webhooks/PROVIDER)")
	return command{
		help: "Signs (web) or authorises (mobile) a JSON event with the configured secret and POSTs it,\nas the providers' \"send test event\" buttons do. Exits non-zero unless the server answers 2xx.",
		run: func(ctx context.Context, e env) error {
			if provider != billing.ProviderWeb && provider != billing.ProviderMobile {
				return errors.New("--provider: want web or mobile")
			}
			if file == "" {
				return errors.New("--file is required")
			}
			signatureHeader, ok := map[string]string{"web": billing.HeaderWebSignature, "stripe": billing.HeaderStripeSignature}[header]
			if !ok {
				return errors.New("--header: want web or stripe")
			}
			body, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			if url == "" {
				url = e.cfg.PublicURL + "/" + e.cfg.BillingMount + "/webhooks/" + provider
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/json")
			switch provider {
			case billing.ProviderWeb:
				if e.cfg.WebWebhookSecret == "" {
					return errors.New("WEB_WEBHOOK_SECRET is not set")
				}
				req.Header.Set(signatureHeader, billing.SignWebHeader(e.cfg.WebWebhookSecret, time.Now(), body))
			case billing.ProviderMobile:
				req.Header.Set("Authorization", e.cfg.MobileWebhookSecret)
			}
			resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			fmt.Fprintf(e.stdout, "%s\n%s", resp.Status, answer)
			if resp.StatusCode/100 != 2 {
				return fmt.Errorf("the server answered %s", resp.Status)
			}
			return nil
		},
	}
}

// openDB opens DATABASE_URL and, when asked, migrates it.
func openDB(ctx context.Context, e env, migrate bool) (*db.DB, error) {
	d, err := db.Open(ctx, e.cfg.DatabaseURL, e.cfg.DBTimeout)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*db.DB, error) {
		d.Close()
		return nil, err
	}
	syncEngine := e.cfg.WebIngestion == config.IngestSyncEngine
	if syncEngine {
		if err := billing.CheckMirror(ctx, d, e.cfg.SyncEngineSchema); err != nil {
			return fail(err)
		}
	}
	if migrate {
		applied, err := d.Migrate(ctx)
		if err != nil {
			return fail(err)
		}
		for _, m := range applied {
			e.log.Info("migration applied", "file", m)
		}
		if syncEngine {
			if err := billing.EnsureMirrorIndexes(ctx, d, e.cfg.SyncEngineSchema); err != nil {
				return fail(err)
			}
		}
	}
	return d, nil
}

// healthcheck asks a running server's /healthz. It needs no configuration beyond ADDR or
// PORT, so a container can run it with or without the service's secrets.
func healthcheck(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var target string
	_, err := parseFlags("healthcheck", args, stdout, stderr, func(fs *flag.FlagSet) command {
		fs.StringVar(&target, "url", "", "the /healthz URL (default: http://127.0.0.1:<port of ADDR or PORT>/healthz)")
		return command{help: "Exits 0 when the server answers /healthz with 200 within 3 s, 1 otherwise."}
	})
	if err != nil {
		return err
	}
	if target == "" {
		addr := getenv("ADDR")
		if addr == "" {
			addr = ":" + cmp.Or(getenv("PORT"), "8080")
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("ADDR: %v", err)
		}
		target = "http://127.0.0.1:" + port + "/healthz"
	}
	reqCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("unhealthy: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("unhealthy: %s", resp.Status)
	}
	fmt.Fprintln(stdout, "healthy")
	return nil
}

func cmdEntitlementsCheck(*flag.FlagSet) command {
	return command{
		args: "USER_ID NAME",
		help: "Prints whether the user is entitled to NAME now, with the plan and, for a metered\nentitlement, the limit and this period's usage. Exits 0 when entitled, 1 when not:\nthe same answer /api/v1/me gives.",
		run: func(ctx context.Context, e env) error {
			return withUser(ctx, e, func(userID string, b *billing.Service) error {
				return checkEntitlement(ctx, e, b, userID, e.args[1])
			})
		},
	}
}

// checkEntitlement prints whether userID is entitled to name, and is errNo when not.
func checkEntitlement(ctx context.Context, e env, b *billing.Service, userID, name string) error {
	view, err := b.View(ctx, userID)
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

// withUser runs fn for the command's USER_ID (its first argument, a UUID) over the
// billing of DATABASE_URL.
func withUser(ctx context.Context, e env, fn func(userID string, b *billing.Service) error) error {
	userID := e.args[0]
	if _, err := uuid.Parse(userID); err != nil {
		return fmt.Errorf("USER_ID: want the identity user's UUID, got %q", userID)
	}
	d, err := openDB(ctx, e, false)
	if err != nil {
		return err
	}
	defer d.Close()
	return fn(userID, newBilling(d, e, nil))
}

func cmdKeysCreate(fs *flag.FlagSet) command {
	var name string
	fs.StringVar(&name, "name", "", "what the key is for, e.g. billing-backend (required)")
	return command{
		help: "Makes a service key for a trusted backend and prints it. It is shown this once: only its\nSHA-256 is stored. Send it as Authorization: Bearer tgk_… to /api/v1/users/{user_id}/….",
		run: func(ctx context.Context, e env) error {
			if name == "" {
				return errors.New("--name is required")
			}
			return withKeys(ctx, e, func(keys *servicekeys.Keys) error {
				key, err := keys.Create(ctx, name)
				if err == nil {
					fmt.Fprintln(e.stdout, key)
				}
				return err
			})
		},
	}
}

func cmdKeysList(*flag.FlagSet) command {
	return command{
		help: "Lists the service keys: name, the key's first characters, when made and last used.",
		run: func(ctx context.Context, e env) error {
			return withKeys(ctx, e, func(keys *servicekeys.Keys) error {
				list, err := keys.List(ctx)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "%-24s %-12s %-20s %s\n", "NAME", "PREFIX", "CREATED", "LAST USED")
				for _, k := range list {
					used := "never"
					if k.LastUsedAt != nil {
						used = k.LastUsedAt.Format(time.RFC3339)
					}
					fmt.Fprintf(e.stdout, "%-24s %-12s %-20s %s\n", k.Name, k.Prefix+"…", k.CreatedAt.Format(time.RFC3339), used)
				}
				return nil
			})
		},
	}
}

func cmdKeysRevoke(*flag.FlagSet) command {
	return command{
		args: "NAME",
		help: "Revokes the service key NAME: it is refused (401) from the next request on.",
		run: func(ctx context.Context, e env) error {
			return withKeys(ctx, e, func(keys *servicekeys.Keys) error {
				if err := keys.Revoke(ctx, e.args[0]); err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "revoked %s\n", e.args[0])
				return nil
			})
		},
	}
}

// withKeys runs fn over the service keys of DATABASE_URL.
func withKeys(ctx context.Context, e env, fn func(keys *servicekeys.Keys) error) error {
	d, err := openDB(ctx, e, e.cfg.AutoMigrate)
	if err != nil {
		return err
	}
	defer d.Close()
	return fn(servicekeys.New(d))
}

func cmdUsersShow(fs *flag.FlagSet) command {
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return command{
		args: "USER_ID",
		help: "Shows what tollgate knows of a user's billing: billing customers, each provider subscription\n(status, period end, plan, last event), the effective plan and entitlements with this period's\nusage (the answer /api/v1/me gives), and the last 10 provider events naming the user.",
		run: func(ctx context.Context, e env) error {
			return withUser(ctx, e, func(userID string, b *billing.Service) error {
				report, err := b.Inspect(ctx, userID)
				if err != nil {
					return err
				}
				if asJSON {
					enc := json.NewEncoder(e.stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(report)
				}
				printReport(e.stdout, report)
				return nil
			})
		},
	}
}

// printReport writes a user report for people.
func printReport(w io.Writer, r billing.UserReport) {
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
		fmt.Fprintf(w, "  %-6s %s  %s until %s  plan %s  last %s at %s\n", s.Provider, s.ID, s.Status, date(s.CurrentPeriodEnd),
			s.Plan, orNone(s.LastEventType), date(s.LastEventAt))
	}
	b := r.Billing
	plan := "none"
	if b.Plan != nil {
		plan = b.Plan.Key
	}
	fmt.Fprintf(w, "\nbilling: plan %s, subscribed %t, status %s, provider %s, period end %s\nentitlements:\n",
		plan, b.Subscribed, orNone(b.Status), orNone(b.Provider), date(b.CurrentPeriodEnd))
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
		state := "processed " + date(ev.ProcessedAt)
		if ev.ProcessingError != nil {
			state += ": " + *ev.ProcessingError
		}
		fmt.Fprintf(w, "  %s  %-6s %s  %s  %s\n", ev.ReceivedAt.Format(time.RFC3339), ev.Provider, ev.ID, ev.Type, state)
	}
}
