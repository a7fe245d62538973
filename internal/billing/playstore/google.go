package playstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/androidpublisher/v3"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/tollgate/tollgate/internal/billing"
)

// errUnknownToken: Google does not know the purchase token (404, 410).
var errUnknownToken = errors.New("the purchase token is unknown to Google")

// api is the Google Play Developer API, as a service account reaches it.
type api struct {
	packageName string
	service     *androidpublisher.Service
}

// newAPI authenticates with the service account key (its token_uri honoured) through
// Google's own libraries.
func newAPI(ctx context.Context, cfg Config) (*api, error) {
	creds, err := google.CredentialsFromJSON(context.WithValue(ctx, oauth2.HTTPClient, cfg.HTTPClient), cfg.ServiceAccountJSON, androidpublisher.AndroidpublisherScope)
	if err != nil {
		return nil, errors.New("PLAY_SERVICE_ACCOUNT_JSON: not a service account key")
	}
	client := oauth2.NewClient(context.WithValue(ctx, oauth2.HTTPClient, cfg.HTTPClient), creds.TokenSource)
	client.Transport = &retrying{base: client.Transport, perTry: client.Timeout, backoff: cfg.Backoff}
	client.Timeout = 0 // each try has its own
	opts := []option.ClientOption{option.WithHTTPClient(client)}
	if cfg.APIBase != "" {
		opts = append(opts, option.WithEndpoint(cfg.APIBase))
	}
	service, err := androidpublisher.NewService(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return &api{packageName: cfg.PackageName, service: service}, nil
}

// subscription reads a subscription purchase (purchases.subscriptionsv2.get).
func (a *api) subscription(ctx context.Context, token string) (*androidpublisher.SubscriptionPurchaseV2, error) {
	purchase, err := a.service.Purchases.Subscriptionsv2.Get(a.packageName, token).Context(ctx).Do()
	return purchase, unknownToken(err)
}

// unknownToken is errUnknownToken for Google's 404 and 410, else err as readAs reads it.
func unknownToken(err error) error {
	var apiErr *googleapi.Error
	if errors.As(err, &apiErr) && (apiErr.Code == http.StatusNotFound || apiErr.Code == http.StatusGone) {
		return errUnknownToken
	}
	return readAs(err)
}

// readAs reads Google's answer by what it means: a 401 or 403 refuses tollgate's service
// account (billing.ErrAPIRefused), and no other call can succeed until it is fixed.
func readAs(err error) error {
	var apiErr *googleapi.Error
	if errors.As(err, &apiErr) && (apiErr.Code == http.StatusUnauthorized || apiErr.Code == http.StatusForbidden) {
		return fmt.Errorf("%w: Google refused the service account of PLAY_SERVICE_ACCOUNT_JSON (%d): check that it has access to PLAY_PACKAGE_NAME in Play Console: %v",
			billing.ErrAPIRefused, apiErr.Code, err)
	}
	return err
}

// acknowledged is nil for an acknowledgement Google says was made already, else err.
func acknowledged(err error) error {
	var apiErr *googleapi.Error
	if errors.As(err, &apiErr) && apiErr.Code == http.StatusBadRequest && len(apiErr.Errors) > 0 && apiErr.Errors[0].Reason == "alreadyAcknowledged" {
		return nil
	}
	return err
}

// product reads a one-time product's purchase (purchases.products.get).
func (a *api) product(ctx context.Context, sku, token string) (*androidpublisher.ProductPurchase, error) {
	purchase, err := a.service.Purchases.Products.Get(a.packageName, sku, token).Context(ctx).Do()
	return purchase, unknownToken(err)
}

// acknowledgeProduct acknowledges a one-time product's purchase.
func (a *api) acknowledgeProduct(ctx context.Context, sku, token string) error {
	return acknowledged(a.service.Purchases.Products.Acknowledge(a.packageName, sku, token, &androidpublisher.ProductPurchasesAcknowledgeRequest{}).Context(ctx).Do())
}

// acknowledge acknowledges a subscription purchase; one already acknowledged is done.
func (a *api) acknowledge(ctx context.Context, product, token string) error {
	return acknowledged(a.service.Purchases.Subscriptions.Acknowledge(a.packageName, product, token, &androidpublisher.SubscriptionPurchasesAcknowledgeRequest{}).Context(ctx).Do())
}
