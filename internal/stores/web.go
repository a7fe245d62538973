package stores

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/billing/stripe/mirror"
	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/db"
)

// webKeyNeeded is what a command that reads the web store's API says without its key.
const webKeyNeeded = "WEB_API_KEY: is required to read the web provider's subscriptions (a secret key, or a restricted key with Subscriptions: Read)"

// SignatureHeaders are the web store's choices of header for "webhook send --header": web
// (Web-Signature) or stripe (Stripe-Signature, as Stripe sends it).
var SignatureHeaders = []string{"web", "stripe"}

// web is Stripe (or any Stripe-shaped provider): its webhooks signed with
// WEB_WEBHOOK_SECRET, its API read and its checkout made with WEB_API_KEY, or its
// subscriptions read from its sync engine's mirror (WEB_INGESTION=sync_engine).
var web = Store{Name: billing.ProviderWeb, Display: "Stripe", On: always, Open: openWeb,
	Note: func(cfg config.Config) string {
		if cfg.WebIngestion == config.IngestSyncEngine {
			return "sync_engine"
		}
		return ""
	},
	Dashboard: func(id string) string {
		if strings.HasPrefix(id, "sub_") {
			return "https://dashboard.stripe.com/subscriptions/" + id
		}
		return ""
	},
	TestEvents: &TestEvents{
		Shape: "Stripe-shaped", LooksLike: stripe.LooksLike, ForUser: stripe.ForUser, MoveToNow: stripe.MoveToNow,
		Deliver: func(_ context.Context, d Delivery) ([]byte, http.Header, error) {
			if d.Config.WebWebhookSecret == "" {
				return nil, nil, errors.New("WEB_WEBHOOK_SECRET is not set")
			}
			header := jsonHeader()
			name := stripe.HeaderWebSignature
			if d.SignatureHeader == "stripe" {
				name = stripe.HeaderStripeSignature
			}
			header.Set(name, stripe.SignHeader(d.Config.WebWebhookSecret, time.Now(), d.Body))
			return d.Body, header, nil
		},
		NotHeard: func(_ config.Config, status int) string {
			if status != http.StatusUnauthorized {
				return ""
			}
			return "the server refused this command's signature: the WEB_WEBHOOK_SECRET this command signed with and the server's differ (give both the same)"
		},
	},
	API: &API{On: func(cfg config.Config) bool { return cfg.WebAPIKey != "" }, Needs: webKeyNeeded, Lists: true},
	SyncEngine: &SyncEngine{Check: mirror.Check, EnsureIndexes: mirror.EnsureIndexes,
		New: func(d *db.DB, schema string, log *slog.Logger) plans.Mirror { return mirror.New(d, schema, log) }},
}

func openWeb(cfg config.Config) (Opened, error) {
	o := Opened{Adapter: stripe.New(cfg.WebWebhookSecret), Unrouted: cfg.WebIngestion == config.IngestSyncEngine}
	if cfg.WebAPIKey == "" {
		return o, nil
	}
	o.Checkout = stripe.WebStore(stripe.NewClient(stripe.Config{Key: cfg.WebAPIKey, Base: cfg.WebAPIBase}))
	o.Reading = func(onWait func(time.Duration, string)) (Reading, error) {
		api := stripe.NewClient(stripe.Config{Key: cfg.WebAPIKey, Base: cfg.WebAPIBase, OnWait: onWait})
		return Reading{List: func(q ListQuery) pipeline.PageReader {
			query := stripe.SubscriptionQuery{CreatedSince: q.CreatedSince, Customer: q.Customer}
			return func(ctx context.Context, after string) (pipeline.Page, error) {
				query.StartingAfter = after
				page, err := api.Subscriptions(ctx, query)
				return pipeline.Page{Subscriptions: page.Subscriptions, LastID: page.LastID, HasMore: page.HasMore}, err
			}
		}}, nil
	}
	return o, nil
}
