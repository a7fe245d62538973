package stores

import (
	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/adapty"
	"github.com/tollgate/tollgate/internal/config"
)

// mobile is Adapty (or any Adapty-shaped provider): its webhooks authorised with
// MOBILE_WEBHOOK_SECRET.
var mobile = Store{Name: billing.ProviderMobile, On: always, Adapter: func(cfg config.Config) (billing.Adapter, error) {
	return adapty.New(cfg.MobileWebhookSecret, cfg.MobileEventAliases), nil
}}
