package stores

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing/paddle"
	"github.com/tollgate/tollgate/internal/billing/paddle/paddledev"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/config"
)

// paddleStore is Paddle Billing, a web store heard when PADDLE_WEBHOOK_SECRET is set; its
// API (PADDLE_API_KEY) is read by reconcile and makes checkouts and portal sessions. In
// development without a key, tollgate's stand-in answers for the API.
var paddleStore = Store{Name: paddle.Provider, Display: "Paddle",
	On: func(cfg config.Config) bool { return cfg.Paddle.On() }, Open: openPaddle,
	Prices: paddle.OwnsPrice,
	Note: func(cfg config.Config) string {
		if cfg.Paddle.Dev {
			return "development stand-in"
		}
		return ""
	},
	TestEvents: &TestEvents{
		Shape: "Paddle notification", LooksLike: paddle.LooksLike, ForUser: paddle.ForUser, MoveToNow: paddle.MoveToNow,
		Deliver: func(ctx context.Context, d Delivery) ([]byte, http.Header, error) {
			if !d.Config.Paddle.On() {
				return nil, nil, errors.New("PADDLE_WEBHOOK_SECRET is not set")
			}
			if d.Config.Paddle.Dev {
				if err := tellPaddleStandIn(ctx, d.Config.Paddle, d.Body); err != nil {
					fmt.Fprintf(d.Stderr, "the development stand-in for Paddle's API was not told of the subscription (reconcile will not find it): %v\n", err)
				}
			}
			header := jsonHeader()
			header.Set(paddle.HeaderSignature, paddle.SignHeader(time.Now(), d.Body, d.Config.Paddle.WebhookSecrets[0]))
			return d.Body, header, nil
		},
		NotHeard: func(config.Config, int) string {
			return "the server hears Paddle when started with PADDLE_WEBHOOK_SECRET set, the same as this command's"
		},
	},
	API: &API{On: func(cfg config.Config) bool { return cfg.Paddle.APIKey != "" }, Lists: true,
		Needs: "PADDLE_API_KEY: is required to read Paddle's subscriptions (an API key with the subscriptions read permission)"},
	StandIn: func(cfg config.Config, kept Kept) (*StandIn, error) {
		if !cfg.Paddle.Dev {
			return nil, nil
		}
		standIn := paddledev.New(cfg.Paddle.APIBase)
		if err := standIn.Keep(kept.Saved, kept.Save); err != nil {
			return nil, err
		}
		return &StandIn{Path: config.DevPaddlePath, Handler: standIn.Handler(),
			Warn: "Paddle's API through the development stand-in on " + cfg.Paddle.APIBase + ": set PADDLE_API_KEY to call Paddle"}, nil
	},
}

func openPaddle(cfg config.Config) (Opened, error) {
	o := Opened{Adapter: paddle.New(cfg.Paddle.WebhookSecrets)}
	if cfg.Paddle.APIKey == "" {
		return o, nil
	}
	api, err := paddle.NewAPI(paddle.APIConfig{Key: cfg.Paddle.APIKey, Base: cfg.Paddle.APIBase,
		CheckoutOrigins: append([]string{originOf(cfg.PublicURL)}, cfg.CheckoutRedirectOrigins...)})
	if err != nil {
		return Opened{}, err
	}
	o.Checkout = api.WebStore()
	o.Reading = func(func(time.Duration, string)) (Reading, error) {
		return Reading{List: func(q ListQuery) pipeline.PageReader {
			return func(ctx context.Context, after string) (pipeline.Page, error) {
				page, err := api.Subscriptions(ctx, q.Customer, after)
				return pipeline.Page{Subscriptions: page.Subscriptions, LastID: page.Next, HasMore: page.HasMore}, err
			}
		}}, nil
	}
	return o, nil
}

// originOf is a URL's scheme://host[:port].
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	return u.Scheme + "://" + u.Host
}

// tellPaddleStandIn has the development stand-in for Paddle's API hold a subscription
// notification's subscription, as Paddle would, so that a reconcile pass finds it.
func tellPaddleStandIn(ctx context.Context, cfg config.Paddle, body []byte) error {
	var env struct {
		EventType string          `json:"event_type"`
		Data      json.RawMessage `json:"data"`
	}
	var sub struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(body, &env) != nil || !strings.HasPrefix(env.EventType, "subscription.") || json.Unmarshal(env.Data, &sub) != nil {
		return nil // not about a subscription's state
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, cfg.APIBase+"/subscriptions/"+url.PathEscape(sub.ID), bytes.NewReader(env.Data))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("%w (is tollgate serve running?)", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("it answered %s", resp.Status)
	}
	return nil
}
