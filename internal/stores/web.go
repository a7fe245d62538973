package stores

import (
	"context"
	"errors"
	"time"

	"net/http"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/config"
)

// web is Stripe (or any Stripe-shaped provider): its webhooks signed with WEB_WEBHOOK_SECRET.
var web = Store{Name: billing.ProviderWeb, On: always, Adapter: func(cfg config.Config) (billing.Adapter, error) {
	return stripe.New(cfg.WebWebhookSecret), nil
}, TestEvents: TestEvents{
	Shape: "Stripe-shaped", LooksLike: stripe.LooksLike, ForUser: stripe.ForUser, MoveToNow: stripe.MoveToNow,
	Deliver: func(_ context.Context, d Delivery) ([]byte, http.Header, error) {
		if d.Config.WebWebhookSecret == "" {
			return nil, nil, errors.New("WEB_WEBHOOK_SECRET is not set")
		}
		header := jsonHeader()
		header.Set(d.SignatureHeader, stripe.SignHeader(d.Config.WebWebhookSecret, time.Now(), d.Body))
		return d.Body, header, nil
	},
	NotHeard: func(config.Config) string { return "" },
}}
