package app

// "webhook send" for the stores: what the App Store's local test chain needs of the
// server, and Google Play through the development stand-in for Google.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/playstore/playdev"
	"github.com/tollgate/tollgate/internal/config"
)

// appStoreSettings are the settings a server needs to hear notifications signed with
// the local test chain.
func appStoreSettings(e env) string {
	return fmt.Sprintf("APPSTORE_BUNDLE_ID=%s APPSTORE_ROOT_CERTS=%s", cmp.Or(e.cfg.AppStore.BundleID, fixturesBundle),
		appstoredev.RootPath(e.cfg.AppStore.TestChain))
}

// fixturesBundle is the app the App Store fixtures are about.
const fixturesBundle = "com.example.app"

// devPlayNeeds is what Google Play through the development stand-in needs.
const devPlayNeeds = "it runs in development (APP_ENV unset or development) with PLAY_PACKAGE_NAME unset and ADDR on loopback"

// notHeard is what to add to a refusal of a store's event that means the server does not
// hear that store as the command sends it: the settings to restart it with.
func notHeard(e env, provider string, status int) string {
	if status != http.StatusNotFound && status != http.StatusUnauthorized {
		return ""
	}
	switch provider {
	case billing.ProviderAppStore:
		return "; the server hears notifications signed with the local test chain when started with " + appStoreSettings(e)
	case billing.ProviderPlayStore:
		return "; the server hears Google Play through its development stand-in when " + devPlayNeeds
	}
	return ""
}

// newPlayPurchase is a new purchase of the plans file's first subscription product for
// the mobile stores, by userID, as a Google Play test event.
func newPlayPurchase(e env, userID string) ([]byte, error) {
	list, err := plans.LoadPlans(e.cfg.PlansFile)
	if err != nil {
		return nil, fmt.Errorf("PLANS_FILE: %w (or give --file)", err)
	}
	for _, p := range list {
		for _, product := range p.MobileProducts {
			if _, oneTime := p.Lasts[product]; !oneTime {
				return json.Marshal(playdev.NewPurchase(e.cfg.PlayStore.PackageName, product, userID, time.Now()))
			}
		}
	}
	return nil, fmt.Errorf("no plan in PLANS_FILE=%s lists a subscription under mobile_products: add one, or give --file", e.cfg.PlansFile)
}

// pushPlay has the development stand-in for Google report the event's purchase, and gives
// the Pub/Sub push of its notification and the push token the stand-in signed for it.
func pushPlay(ctx context.Context, e env, body []byte) (push []byte, token string, _ error) {
	if !e.cfg.PlayStore.Dev {
		return nil, "", fmt.Errorf("--provider playstore sends through the development stand-in for Google, which %s", devPlayNeeds)
	}
	ev, err := playdev.ParseEvent(body)
	if err != nil {
		return nil, "", err
	}
	purchase, err := json.Marshal(playdev.Purchase{PurchaseToken: ev.PurchaseToken(), SubscriptionPurchase: ev.SubscriptionPurchase, ProductPurchase: ev.ProductPurchase})
	if err != nil {
		return nil, "", err
	}
	standIn := e.cfg.PublicURL + config.DevPlayPath + "/purchases"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, standIn, bytes.NewReader(purchase))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("the development stand-in for Google at %s: %w (is tollgate serve running?)", standIn, err)
	}
	defer resp.Body.Close()
	var added playdev.PurchaseAdded
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&added) != nil {
		return nil, "", fmt.Errorf("the development stand-in for Google at %s answered %s: the server runs it when %s", standIn, resp.Status, devPlayNeeds)
	}
	return playdev.Push(ev.MessageID, ev.Notification), added.PushToken, nil
}
