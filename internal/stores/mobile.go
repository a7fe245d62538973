package stores

import (
	"context"
	"errors"
	"net/http"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/adapty"
	"github.com/tollgate/tollgate/internal/config"
)

// mobile is Adapty (or any Adapty-shaped provider): its webhooks authorised with
// MOBILE_WEBHOOK_SECRET. It sells in the app; it has no API tollgate reads.
var mobile = Store{Name: billing.ProviderMobile, Display: "Adapty", InApp: true, On: always,
	Open: func(cfg config.Config) (Opened, error) {
		return Opened{Adapter: adapty.New(cfg.MobileWebhookSecret, cfg.MobileEventAliases)}, nil
	},
	TestEvents: &TestEvents{
		Shape: "Adapty-shaped", LooksLike: adapty.LooksLike, ForUser: adapty.ForUser, MoveToNow: adapty.MoveToNow,
		Deliver: func(_ context.Context, d Delivery) ([]byte, http.Header, error) {
			if d.Config.MobileWebhookSecret == "" {
				return nil, nil, errors.New("MOBILE_WEBHOOK_SECRET is not set")
			}
			header := jsonHeader()
			header.Set("Authorization", d.Config.MobileWebhookSecret)
			return d.Body, header, nil
		},
		NotHeard: func(_ config.Config, status int) string {
			if status != http.StatusUnauthorized {
				return ""
			}
			return "the server refused this command's Authorization: the MOBILE_WEBHOOK_SECRET this command sent and the server's differ (give both the same)"
		},
	},
}
