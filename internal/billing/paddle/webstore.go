package paddle

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"

	paddlesdk "github.com/PaddleHQ/paddle-go-sdk/v4"

	"github.com/tollgate/tollgate/internal/billing"
)

// WebStore is Paddle as checkout and the portal use it. A checkout is a transaction
// whose custom_data names the buyer, opened at its checkout.url: the account's default
// payment link, a page of the app's own that runs Paddle.js, with ?_ptxn= the transaction.
// Paddle takes no return URLs on a transaction: that page's Paddle.js settings say where a
// buyer goes after paying.
func (a *API) WebStore() billing.WebStore { return webStore{a} }

type webStore struct{ api *API }

func (webStore) Provider() string { return Provider }

func (webStore) OwnsPrice(id string) bool { return OwnsPrice(id) }

// OwnsPrice says whether a price id is Paddle's: Paddle's begin pri_.
func OwnsPrice(id string) bool { return strings.HasPrefix(id, "pri_") }

// PageOrigins: the checkout opens on the app's own page (the default payment link, on one
// of the checkout origins), the customer portal on Paddle's (live or sandbox; a stand-in's
// own).
func (w webStore) PageOrigins() []string {
	origins := slices.Clone(w.api.cfg.CheckoutOrigins)
	switch w.api.cfg.Base {
	case "https://api.paddle.com":
		return append(origins, "https://customer-portal.paddle.com")
	case "https://sandbox-api.paddle.com":
		return append(origins, "https://sandbox-customer-portal.paddle.com")
	}
	if u, err := url.Parse(w.api.cfg.Base); err == nil && u.Host != "" {
		origins = append(origins, u.Scheme+"://"+u.Host)
	}
	return origins
}

func (w webStore) CreateCheckout(ctx context.Context, p billing.Purchase) (string, error) {
	req := &paddlesdk.CreateTransactionRequest{
		Items: []paddlesdk.CreateTransactionItems{*paddlesdk.NewCreateTransactionItemsTransactionItemFromCatalog(
			&paddlesdk.TransactionItemFromCatalog{PriceID: p.Price, Quantity: 1})},
		CustomData: paddlesdk.CustomData{"user_id": p.UserID},
	}
	if p.Customer != "" {
		req.CustomerID = &p.Customer
	}
	txn, err := w.api.sdk.CreateTransaction(ctx, req)
	if err != nil {
		return "", &Error{Status: sdkStatus(err), Message: "creating a transaction failed"}
	}
	if txn.Checkout == nil || txn.Checkout.URL == nil || *txn.Checkout.URL == "" {
		return "", &Error{Status: 200, Message: "the transaction has no checkout URL: set a default payment link in Paddle (Checkout → Checkout settings)"}
	}
	return *txn.Checkout.URL, nil
}

// CreatePortal opens the customer portal's overview; Paddle's portal has no return URL.
func (w webStore) CreatePortal(ctx context.Context, customer, _ string) (string, error) {
	session, err := w.api.sdk.CreateCustomerPortalSession(ctx, &paddlesdk.CreateCustomerPortalSessionRequest{CustomerID: customer})
	if err != nil {
		return "", &Error{Status: sdkStatus(err), Message: "creating a portal session failed"}
	}
	return session.URLs.General.Overview, nil
}

// ReadPurchase: a Paddle checkout is not read back by its return (its webhooks, or a
// reconcile pass, bring it in).
func (webStore) ReadPurchase(context.Context, string) (billing.PurchaseRead, error) {
	return billing.PurchaseRead{}, billing.ErrNoSuchPurchase
}

func (w webStore) CustomerSubscriptions(ctx context.Context, customer, after string) (billing.SubscriptionsPage, error) {
	if customer == "" {
		return billing.SubscriptionsPage{}, errors.New("no Paddle customer")
	}
	page, err := w.api.Subscriptions(ctx, customer, after)
	return billing.SubscriptionsPage{Subscriptions: page.Subscriptions, LastID: page.Next, HasMore: page.HasMore}, err
}
