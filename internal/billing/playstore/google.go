package playstore

import (
	"context"
	"errors"
	"net/http"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/androidpublisher/v3"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
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

// unknownToken is errUnknownToken for Google's 404 and 410, else err.
func unknownToken(err error) error {
	var apiErr *googleapi.Error
	if errors.As(err, &apiErr) && (apiErr.Code == http.StatusNotFound || apiErr.Code == http.StatusGone) {
		return errUnknownToken
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
