package app

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/checkout"
	"github.com/tollgate/tollgate/internal/billing/grant"
	"github.com/tollgate/tollgate/internal/billing/grants"
	"github.com/tollgate/tollgate/internal/billing/mirror"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/billing/webhooks"
	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/stores"
)

// billingParts is billing as the configuration wires it: the pipeline that applies the
// adapters' events, the reader that answers, checkout, and the webhook routes. A new
// provider is one more adapter in the list (adapters).
type billingParts struct {
	pipeline *pipeline.Pipeline
	reader   *reader.Reader
	checkout *checkout.Checkout
	webhooks *webhooks.Webhooks
	// grants are what support gives by hand, applied by the pipeline as provider "grant".
	grants *grants.Grants
}

func newBilling(d *db.DB, e env, reg prometheus.Registerer) (*billingParts, error) {
	cfg := e.cfg
	all, err := stores.Adapters(cfg)
	if err != nil {
		return nil, err
	}
	// In sync_engine mode the web provider's events are not received (its route does not
	// exist) but those stored before can still be replayed.
	var routed []billing.Adapter
	for _, a := range all {
		if a.Provider() != billing.ProviderWeb || cfg.WebIngestion == config.IngestWebhook {
			routed = append(routed, a)
		}
	}
	all = append(all, grant.New()) // applied and replayed, never received: no webhook route
	var m *mirror.Mirror
	if schema := syncEngineSchema(cfg); schema != "" {
		m = mirror.New(d, schema, e.log)
	}
	catalogues := &plans.Catalogues{}
	b := &billingParts{
		pipeline: pipeline.New(d, e.log, pipeline.Options{
			Adapters: all, Catalogues: catalogues, Mirror: m, OutboundWebhooks: cfg.OutboundWebhookURL != "",
			Batching: pipeline.Batching{Size: cfg.Batching.Size, Wait: cfg.Batching.Wait}, Registerer: reg,
		}),
		reader: reader.New(d, e.log, reader.Options{AnswersMaxAge: cfg.BillingAnswerMaxAge, Catalogues: catalogues, Mirror: m}),
	}
	b.pipeline.OnCommit(b.reader.Forget)
	var api *stripe.Client
	if cfg.WebAPIKey != "" {
		api = webAPI(cfg, nil)
	}
	opts := checkout.Options{API: api, PublicURL: cfg.PublicURL, RedirectOrigins: cfg.CheckoutRedirectOrigins}
	if _, ok := b.pipeline.Adapter(billing.ProviderWeb); ok { // not in sync_engine mode, whose mirror another program writes
		opts.Applier = b.pipeline
	}
	b.checkout = checkout.New(d, e.log, b.reader, opts)
	b.webhooks = webhooks.New(b.pipeline, e.log, webhooks.Options{Adapters: routed, MaxBody: cfg.WebhookMaxBody, Registerer: reg})
	b.grants = grants.New(d, b.pipeline, e.log, nil)
	return b, nil
}

// syncPlans writes the plans into the database; answers kept from the old catalogue go.
func (b *billingParts) syncPlans(ctx context.Context, d *db.DB, list []plans.PlanConfig) ([]string, error) {
	changes, err := plans.Sync(ctx, d, list, time.Now().UTC())
	if err == nil && len(changes) > 0 {
		b.reader.Forget("*")
	}
	return changes, err
}

// webAPI is the client of the web provider's API that WEB_API_KEY and WEB_API_BASE name.
func webAPI(cfg config.Config, onWait func(time.Duration, string)) *stripe.Client {
	return stripe.NewClient(stripe.Config{Key: cfg.WebAPIKey, Base: cfg.WebAPIBase, OnWait: onWait})
}

// oneOf lists choices for a message: "a, b or c".
func oneOf(choices []string) string {
	if len(choices) < 2 {
		return strings.Join(choices, "")
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}
