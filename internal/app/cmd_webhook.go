package app

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/webhooks"
	"github.com/tollgate/tollgate/internal/stores"
)

func cmdWebhookSend(fs *flag.FlagSet) command {
	var provider, file, url, header, user string
	var now bool
	fs.StringVar(&provider, "provider", "", oneOf(stores.All().Names())+" (required)")
	fs.StringVar(&header, "header", "web", "web signature header: web (Web-Signature) or stripe (Stripe-Signature, as Stripe sends it)")
	fs.StringVar(&file, "file", "", "path of the JSON event to send (required, except for playstore: a new purchase of the plans file's first mobile product)")
	fs.StringVar(&url, "url", "", "endpoint to POST to (default: PUBLIC_URL/BILLING_MOUNT/webhooks/PROVIDER)")
	fs.StringVar(&user, "user", "", "send the event for this user id (e.g. from \"tollgate dev token\"): the ids in the file become ones of that user's own")
	fs.BoolVar(&now, "now", false, "move the event's times so that it happens now, under a new event id; what lies ahead of it keeps its distance from the subscription's start, so one life's files keep their periods in order")
	return command{
		help: "Signs (web) or authorises (mobile) a JSON event with the configured secret and POSTs it,\n" +
			"or signs an App Store notification written decoded with a local test chain (appstore),\n" +
			"or has the development stand-in for Google report a purchase and pushes its notification\n" +
			"(playstore), as the providers do, then says what became of it: applied (with the user's\n" +
			"plan and status), duplicate, stale, ignored, unresolved or stored with an error.\n" +
			"With --user every provider id in the file (customer, subscription, transaction, purchase\n" +
			"token, profile) becomes one of that user's own: the same on every send for that user, so\n" +
			"a later fixture of the lifecycle acts on the subscription the first one started.\n" +
			"Exits non-zero unless the server answers 2xx.",
		required: []string{"provider"},
		check: func(_ []string, list stores.List) error {
			store, ok := list.ByName(provider)
			if names := sendable(list); !ok || store.TestEvents == nil {
				return fmt.Errorf("--provider: want %s, got %q", oneOf(names), provider)
			}
			if !slices.Contains(stores.SignatureHeaders, header) {
				return fmt.Errorf("--header: want %s, got %q", oneOf(stores.SignatureHeaders), header)
			}
			if file == "" && store.TestEvents.New == nil {
				return errors.New("--file is required")
			}
			return nil
		},
		run: func(ctx context.Context, e env) error {
			body, err := testEventBody(e, provider, file, user, now)
			if err != nil {
				return err
			}
			if url == "" {
				url = e.cfg.PublicURL + "/" + e.cfg.BillingMount + "/webhooks/" + provider
			}
			req, err := deliveryRequest(ctx, e, provider, header, url, body)
			if err != nil {
				// Such as a secret not set: outside the repository root, the likely cause.
				return fmt.Errorf("%w%s", err, devEnvMissing(e.devEnvLooked))
			}
			resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			fmt.Fprintf(e.stdout, "%s\n%s", resp.Status, answer)
			if resp.StatusCode/100 != 2 {
				return fmt.Errorf("the server answered %s%s", resp.Status, notHeard(e, provider, resp.StatusCode))
			}
			return describeOutcome(ctx, e, resp.Header)
		},
	}
}

// testEventBody is the event to send: the file, or without one the store's new purchase,
// with --user's and --now's edits.
func testEventBody(e env, provider, file, user string, now bool) ([]byte, error) {
	events := storeOf(e, provider).TestEvents
	if file == "" {
		return events.New(e.cfg, user)
	}
	body, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if shape := e.stores.ShapeOf(body); shape != "" && shape != provider {
		return nil, fmt.Errorf("%s holds a %s event (%s), not a %s one: send it with --provider %s", file, shape, storeOf(e, shape).TestEvents.Shape, provider, shape)
	}
	if user != "" {
		if body, err = events.ForUser(body, user); err != nil {
			return nil, fmt.Errorf("--user: %w", err)
		}
	}
	if now {
		if body, err = events.MoveToNow(body, time.Now()); err != nil {
			return nil, fmt.Errorf("--now: %w", err)
		}
	}
	return body, nil
}

// deliveryRequest is the POST of body to url as provider delivers it: signed (web, the App
// Store), authorised (mobile) or pushed (Google Play) with what this configuration holds.
func deliveryRequest(ctx context.Context, e env, provider, signatureHeader, url string, body []byte) (*http.Request, error) {
	body, header, err := storeOf(e, provider).TestEvents.Deliver(ctx, stores.Delivery{Config: e.cfg, Body: body, SignatureHeader: signatureHeader, Stderr: e.stderr})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = header
	return req, nil
}

// storeOf is the store named provider, which the flags' check has made sure of.
func storeOf(e env, provider string) stores.Store {
	s, _ := e.stores.ByName(provider)
	return s
}

// sendable are the stores whose test events the command sends.
func sendable(list stores.List) []string {
	return list.NamesWhere(func(s stores.Store) bool { return s.TestEvents != nil })
}

// notHeard is what to add to a refusal of a store's event that means the server does not
// hear that store as the command sends it: the settings to restart it with.
func notHeard(e env, provider string, status int) string {
	if status != http.StatusNotFound && status != http.StatusUnauthorized {
		return ""
	}
	if hint := storeOf(e, provider).TestEvents.NotHeard(e.cfg, status); hint != "" {
		return "; " + hint + devEnvMissing(e.devEnvLooked)
	}
	return ""
}

// outcomeMeaning says in words what each webhook outcome means for the sender.
var outcomeMeaning = map[string]string{
	billing.OutcomeApplied:    "applied",
	billing.OutcomeDuplicate:  "duplicate: this event, or a newer state, was already applied; nothing changed",
	billing.OutcomeStale:      "older than the stored state: kept the newer state; nothing changed",
	billing.OutcomeIgnored:    "ignored: tollgate does not act on this event type (stored, answered 200)",
	billing.OutcomeUnresolved: "unresolved: stored, but it names no known user, price or product, so nothing changed. Map the price in the plans file (then plans sync) or link the customer, and run \"tollgate events replay --unprocessed\"",
	billing.OutcomeInvalid:    "stored with an error: it can never be processed as it is",
	"setup_check":             "the provider's set-up check: answered, nothing stored",
}

// describeOutcome prints what the server did with the event, from its answer's headers,
// and for an applied event the user's resulting plan and status. That is read from this
// configuration's database, which is the server's when --url was not given.
func describeOutcome(ctx context.Context, e env, h http.Header) error {
	outcome := h.Get(webhooks.HeaderOutcome)
	if outcome == "" {
		return nil // not a tollgate server, or an older one
	}
	line := "outcome: " + cmp.Or(outcomeMeaning[outcome], outcome)
	if reason := h.Get(webhooks.HeaderReason); reason != "" {
		line += " (" + reason + ")"
	}
	fmt.Fprintln(e.stdout, line)
	userID := h.Get(webhooks.HeaderUserID)
	if outcome != billing.OutcomeApplied || userID == "" {
		return nil
	}
	d, err := openDB(ctx, e)
	if err != nil {
		fmt.Fprintf(e.stdout, "user %s (the database is not readable here: %v)\n", userID, err)
		return nil
	}
	defer d.Close()
	b, err := newBilling(d, e, nil)
	if err != nil {
		return err
	}
	view, err := b.reader.View(ctx, userID)
	if err != nil {
		return err
	}
	plan, status := "no plan", "not subscribed"
	if view.Plan != nil {
		plan = "plan " + view.Plan.Key
	}
	if view.Status != nil {
		status = view.StatusShown(time.Now())
	}
	fmt.Fprintf(e.stdout, "user %s: %s, %s", userID, plan, status)
	if view.CurrentPeriodEnd != nil {
		// "until" only for a subscription that still entitles: an expired one is not
		// expired until its period's end.
		word := "until"
		if !view.Subscribed {
			word = "period ended"
			if view.CurrentPeriodEnd.After(time.Now()) {
				word = "period ends"
			}
		}
		fmt.Fprintf(e.stdout, " %s %s", word, view.CurrentPeriodEnd.Format(time.RFC3339))
	}
	fmt.Fprintln(e.stdout)
	return nil
}
