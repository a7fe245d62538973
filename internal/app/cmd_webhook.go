package app

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

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
				if e.cfg.MobileWebhookSecret == "" {
					return errors.New("MOBILE_WEBHOOK_SECRET is not set")
				}
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
