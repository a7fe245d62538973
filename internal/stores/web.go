package stores

import (
	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/config"
)

// web is Stripe (or any Stripe-shaped provider): its webhooks signed with WEB_WEBHOOK_SECRET.
var web = Store{Name: billing.ProviderWeb, On: always, Adapter: func(cfg config.Config) (billing.Adapter, error) {
	return stripe.New(cfg.WebWebhookSecret), nil
}}
