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
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/billing/webhooks"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/stores"
)

// billingParts is billing as the configuration wires it: the stores it turns on, the
// pipeline that applies their adapters' events, the reader that answers, checkout, and the
// webhook routes. A new store is one more entry in the list of stores.
type billingParts struct {
	stores   []stores.OpenStore
	pipeline *pipeline.Pipeline
	reader   *reader.Reader
	checkout *checkout.Checkout
	webhooks *webhooks.Webhooks
	// grants are what support gives by hand, applied by the pipeline as provider "grant".
	grants *grants.Grants
}

func newBilling(d *db.DB, e env, reg prometheus.Registerer) (*billingParts, error) {
	cfg := e.cfg
	open, err := e.stores.Open(cfg)
	if err != nil {
		return nil, err
	}
	var all, routed []billing.Adapter
	var m plans.Mirror
	var web []billing.WebStore
	for _, s := range open {
		all = append(all, s.Adapter)
		// A store whose sync engine writes its subscriptions has no route, but the
		// events stored before can still be replayed.
		if !s.Unrouted {
			routed = append(routed, s.Adapter)
		}
		if s.Checkout != nil {
			web = append(web, s.Checkout)
		}
	}
	all = append(all, grant.New()) // applied and replayed, never received: no webhook route
	if syncEngine := syncEngineOf(e); syncEngine != nil {
		m = syncEngine.New(d, cfg.SyncEngineSchema, e.log)
	}
	catalogues := &plans.Catalogues{}
	b := &billingParts{
		stores: open,
		pipeline: pipeline.New(d, e.log, pipeline.Options{
			Adapters: all, Catalogues: catalogues, Mirror: m, OutboundWebhooks: cfg.OutboundWebhookURL != "",
			Batching: pipeline.Batching{Size: cfg.Batching.Size, Wait: cfg.Batching.Wait}, Registerer: reg,
		}),
		reader: reader.New(d, e.log, reader.Options{AnswersMaxAge: cfg.BillingAnswerMaxAge, Catalogues: catalogues, Mirror: m}),
	}
	b.pipeline.OnCommit(b.reader.Forget)
	b.checkout = checkout.New(d, e.log, b.reader, checkout.Options{Stores: web, Known: e.stores.SoldOnWeb(), SoldInApp: e.stores.SoldInApp, Applier: b.pipeline,
		PublicURL: cfg.PublicURL, RedirectOrigins: cfg.CheckoutRedirectOrigins})
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

// oneOf lists choices for a message: "a, b or c".
func oneOf(choices []string) string {
	if len(choices) < 2 {
		return strings.Join(choices, "")
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}
