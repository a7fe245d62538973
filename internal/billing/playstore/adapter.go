// Package playstore is Google Play's adapter: real-time developer notifications pushed by
// Cloud Pub/Sub with an OIDC token Google signs. A notification is only a hint, as Google
// says: the purchase's state is read from the Google Play Developer API (subscriptionsv2)
// before the event's transaction, and applied as the state at the time of that read. A
// purchase still to be acknowledged is acknowledged after it is stored.
package playstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/api/androidpublisher/v3"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/jwks"
)

// Config sets the adapter up.
type Config struct {
	// PackageName is the app's package: notifications for any other are refused.
	PackageName string
	// PushAudience and PushServiceAccount are what the push subscription's OIDC tokens must
	// name: its audience, and the service account that signs them.
	PushAudience, PushServiceAccount string
	// PushJWKSURL serves the keys of push tokens (Google's certificates by default).
	PushJWKSURL string
	// ServiceAccountJSON is the key of the service account that reads purchases; APIBase,
	// when set, replaces the Google Play Developer API's base URL (tests).
	ServiceAccountJSON []byte
	APIBase            string
	// HTTPClient, when set, reaches Google (tests); else a client with a timeout (of each
	// try: a call Google throttles is tried again, retry.go).
	HTTPClient *http.Client
	// Backoff is the first wait before trying a call again that Google gave no Retry-After
	// for, doubled at each try (default a second).
	Backoff time.Duration
}

// Adapter is Google Play's billing.Adapter.
type Adapter struct {
	cfg  Config
	keys *jwks.KeySet
	api  *api
}

// New builds the adapter.
func New(ctx context.Context, cfg Config) (*Adapter, error) {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 15 * time.Second}
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.PushJWKSURL == "" {
		cfg.PushJWKSURL = "https://www.googleapis.com/oauth2/v3/certs"
	}
	api, err := newAPI(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// Google's push keys, fetched on first need and again when a token names a key not
	// held (Google rotates them), at most every 30 s whether the fetch worked or not, so
	// that forgeries naming keys nobody holds cannot make tollgate fetch for each of them.
	// A token whose key is held verifies at once, whatever a fetch in flight is doing.
	keys := jwks.New(cfg.PushJWKSURL, jwks.Options{Client: cfg.HTTPClient, UnknownKIDInterval: 30 * time.Second,
		OnDemandTimeout: 10 * time.Second, RefreshInterval: time.Hour, Name: "Google's push token keys"})
	return &Adapter{cfg: cfg, keys: keys, api: api}, nil
}

// Provider is Google Play's name: its webhook route's last segment, the key of its rows.
const Provider = "playstore"

func (a *Adapter) Provider() string { return Provider }

var errPackage = errors.New("the notification is for another app (packageName)")

// Verify checks the push's OIDC token and that the notification is about this app.
func (a *Adapter) Verify(h http.Header, body []byte, now time.Time) error {
	if err := a.verifyPush(h, now); err != nil {
		return err
	}
	p, err := decode(body)
	if err != nil {
		return err
	}
	if p.notification.PackageName != a.cfg.PackageName {
		return errPackage
	}
	return nil
}

// Parse names the push by its Pub/Sub message id; a voided purchase by its order
// (void:<orderId>), so that a void both pushed and read from the voided purchases list is
// stored once.
func (a *Adapter) Parse(body []byte) (billing.Event, error) {
	p, err := decode(body)
	if err != nil {
		return billing.Event{}, err
	}
	return billing.Event{ID: p.id, Type: p.notification.kind(), Decoded: p}, nil
}

// Fetch reads a subscription notification's purchase from Google, before the event's
// transaction. A token Google does not know is no failure: the event is stored as
// unresolved. Any other failure answers 503, and Pub/Sub retries.
func (a *Adapter) Fetch(ctx context.Context, ev billing.Event, body []byte, now time.Time) (billing.Event, error) {
	p, _ := ev.Decoded.(*parsed)
	if p == nil {
		var err error
		if p, err = decode(body); err != nil {
			return ev, err
		}
	}
	var err error
	switch n := p.notification; {
	case n.SubscriptionNotification != nil && n.SubscriptionNotification.NotificationType != subscriptionRevoked:
		p.purchase, err = a.api.subscription(ctx, n.SubscriptionNotification.PurchaseToken)
	case n.OneTimeProductNotification != nil:
		p.product, err = a.api.product(ctx, n.OneTimeProductNotification.Sku, n.OneTimeProductNotification.PurchaseToken)
	}
	switch {
	case errors.Is(err, errUnknownToken):
		p.unknown = true
	case err != nil:
		return ev, err
	}
	p.read = now.UTC().Truncate(time.Millisecond)
	ev.Decoded = p
	return ev, nil
}

// Committed acknowledges a purchase Google still waits for an acknowledgement of (one not
// acknowledged in three days is refunded). Its failure answers 503, so that Pub/Sub
// delivers again and the acknowledgement is tried again; one already made is not repeated.
func (a *Adapter) Committed(ctx context.Context, ev billing.Event, outcome string) error {
	p, _ := ev.Decoded.(*parsed)
	if p == nil || outcome == billing.OutcomeUnresolved || outcome == billing.OutcomeInvalid { // a purchase no user has is not kept
		return nil
	}
	if one := p.notification.OneTimeProductNotification; one != nil && p.product != nil && p.product.PurchaseState == 0 && p.product.AcknowledgementState == 0 {
		if err := a.api.acknowledgeProduct(ctx, one.Sku, one.PurchaseToken); err != nil {
			return fmt.Errorf("acknowledging the purchase: %w", err)
		}
		return nil
	}
	if p.purchase == nil || p.purchase.AcknowledgementState != "ACKNOWLEDGEMENT_STATE_PENDING" {
		return nil
	}
	if err := a.api.acknowledge(ctx, acknowledgedAs(p.purchase), p.notification.SubscriptionNotification.PurchaseToken); err != nil {
		return fmt.Errorf("acknowledging the purchase: %w", err)
	}
	return nil
}

// acknowledgedAs is the subscription id an acknowledgement names in its path. Since May
// 2025 Google needs none, and advises against one for a subscription with add-ons (it
// would name only one of its line items): one line item is named by its product, several
// by "-", the Google APIs' wildcard of a path segment.
func acknowledgedAs(p *androidpublisher.SubscriptionPurchaseV2) string {
	if len(p.LineItems) == 1 && p.LineItems[0].ProductId != "" {
		return p.LineItems[0].ProductId
	}
	return "-"
}
