package stores

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"golang.org/x/time/rate"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/playstore"
	"github.com/tollgate/tollgate/internal/billing/playstore/playdev"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/config"
)

// playStore is Google Play, heard directly when PLAY_PACKAGE_NAME is set (or through the
// development stand-in). Its test events go through the development stand-in for Google:
// it is told of the purchase, and its notification is pushed with the stand-in's token.
var playStore = Store{Name: playstore.Provider, Display: "Google Play", InApp: true, Claims: true,
	On: func(cfg config.Config) bool { return cfg.PlayStore.PackageName != "" }, Open: openPlayStore,
	Note: func(cfg config.Config) string {
		if cfg.PlayStore.Dev {
			return "development stand-in"
		}
		return ""
	},
	TestEvents: &TestEvents{
		Shape: "Google Play notification and purchase", LooksLike: playdev.LooksLike, ForUser: playdev.ForUser, MoveToNow: playdev.MoveToNow,
		New: newPlayPurchase, Deliver: pushPlay,
		NotHeard: func(config.Config, int) string {
			return "the server hears Google Play through its development stand-in when " + devPlayNeeds
		},
	},
	// Its service account key is required: its API is on whenever it is.
	API: &API{On: func(cfg config.Config) bool { return cfg.PlayStore.PackageName != "" },
		Needs: "PLAY_PACKAGE_NAME and PLAY_SERVICE_ACCOUNT_JSON: are required to read the Google Play Developer API",
		// The development stand-in lives inside serve: only named is it read.
		OnlyNamed: func(cfg config.Config) bool { return cfg.PlayStore.Dev }},
	StandIn:  playStandIn,
	TypeNote: playstore.TypeNumber,
}

// playLimit is the most requests a second a pass makes of Google Play, whatever
// RECONCILE_PACE says: under Google's quota. The voided purchases list has a tighter
// quota of its own, and is read at most once a second.
const playLimit = 40

// openPlayStore is Google Play's adapter and its API: subscriptionsv2 paced under Google's
// limit, and the voided purchases.
func openPlayStore(cfg config.Config) (Opened, error) {
	play, err := playStoreAdapter(cfg)
	if err != nil {
		return Opened{}, err
	}
	reading := func(func(time.Duration, string)) (Reading, error) {
		limit := float64(playLimit)
		if pace := float64(cfg.Reconcile.Pace); pace > 0 {
			limit = min(limit, pace)
		}
		pace, voidedPace := rate.NewLimiter(rate.Limit(limit), 1), rate.NewLimiter(1, 1)
		voided := func(ctx context.Context, start, end time.Time, page string) (billing.HistoryPage, error) {
			if err := voidedPace.Wait(ctx); err != nil {
				return billing.HistoryPage{}, err
			}
			return play.VoidedPurchases(ctx, start, end, page)
		}
		read := func(ctx context.Context, token string, state []byte) (json.RawMessage, error) {
			if err := pace.Wait(ctx); err != nil {
				return nil, err
			}
			return play.ReadSubscription(ctx, token, state)
		}
		return Reading{Noun: "voided purchases", Read: read, Histories: []reconcile.HistoryOptions{{
			Provider: playstore.Provider, Environment: "voided", MaxBack: playstore.VoidedKept, Read: voided,
		}}}, nil
	}
	return Opened{Adapter: play, Reading: reading}, nil
}

// playStandIn is the development stand-in for Google, in development with no package set.
func playStandIn(cfg config.Config, kept Kept) (*StandIn, error) {
	play := cfg.PlayStore
	if !play.Dev {
		return nil, nil
	}
	google, err := playdev.New(playdev.Config{Audience: play.PushAudience, ServiceAccount: play.PushServiceAccount, Saved: kept.Saved, Save: kept.Save})
	if err != nil {
		return nil, err
	}
	return &StandIn{Path: config.DevPlayPath, Handler: google.Handler(),
		Warn: "Google Play through the development stand-in on " + cfg.PublicURL + config.DevPlayPath +
			": no Google account needed; try it with tollgate webhook send --provider playstore. Set PLAY_PACKAGE_NAME to hear Google"}, nil
}

// devPlayNeeds is what Google Play through the development stand-in needs.
const devPlayNeeds = "it runs in development (APP_ENV unset or development) with PLAY_PACKAGE_NAME unset and ADDR on loopback"

// newPlayPurchase is a new purchase of the plans file's first subscription product for
// the mobile stores, by userID, as a Google Play test event.
func newPlayPurchase(cfg config.Config, userID string) ([]byte, error) {
	list, err := plans.LoadPlans(cfg.PlansFile)
	if err != nil {
		return nil, fmt.Errorf("PLANS_FILE: %w (or give --file)", err)
	}
	for _, p := range list {
		for _, product := range p.MobileProducts {
			if _, oneTime := p.Lasts[product]; !oneTime {
				return json.Marshal(playdev.NewPurchase(cfg.PlayStore.PackageName, product, userID, time.Now()))
			}
		}
	}
	return nil, fmt.Errorf("no plan in PLANS_FILE=%s lists a subscription under mobile_products: add one, or give --file", cfg.PlansFile)
}

// pushPlay has the development stand-in for Google report the event's purchase, and gives
// the Pub/Sub push of its notification with the push token the stand-in signed for it.
func pushPlay(ctx context.Context, d Delivery) ([]byte, http.Header, error) {
	if !d.Config.PlayStore.Dev {
		return nil, nil, fmt.Errorf("--provider playstore sends through the development stand-in for Google, which %s", devPlayNeeds)
	}
	ev, err := playdev.ParseEvent(d.Body)
	if err != nil {
		return nil, nil, err
	}
	purchase, err := json.Marshal(playdev.Purchase{PurchaseToken: ev.PurchaseToken(), SubscriptionPurchase: ev.SubscriptionPurchase, ProductPurchase: ev.ProductPurchase})
	if err != nil {
		return nil, nil, err
	}
	standIn := d.Config.PublicURL + config.DevPlayPath + "/purchases"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, standIn, bytes.NewReader(purchase))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("the development stand-in for Google at %s: %w (is tollgate serve running?)", standIn, err)
	}
	defer resp.Body.Close()
	var added playdev.PurchaseAdded
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&added) != nil {
		return nil, nil, fmt.Errorf("the development stand-in for Google at %s answered %s: the server runs it when %s", standIn, resp.Status, devPlayNeeds)
	}
	header := jsonHeader()
	header.Set("Authorization", "Bearer "+added.PushToken)
	return playdev.Push(ev.MessageID, ev.Notification), header, nil
}

// playStoreAdapter is Google Play's adapter, with the service account key of
// PLAY_SERVICE_ACCOUNT_JSON, or one for the development stand-in.
func playStoreAdapter(cfg config.Config) (*playstore.Adapter, error) {
	play := cfg.PlayStore
	var key []byte
	var err error
	if play.Dev {
		key, err = playdev.ServiceAccountJSON(play.APIBase) // the stand-in grants any
	} else if key, err = os.ReadFile(play.ServiceAccountJSON); err != nil {
		err = fmt.Errorf("PLAY_SERVICE_ACCOUNT_JSON: %w", err)
	}
	if err != nil {
		return nil, err
	}
	return playstore.New(context.Background(), playstore.Config{
		PackageName: play.PackageName, PushAudience: play.PushAudience, PushServiceAccount: play.PushServiceAccount,
		PushJWKSURL: play.PushJWKSURL, ServiceAccountJSON: key, APIBase: play.APIBase,
	})
}
