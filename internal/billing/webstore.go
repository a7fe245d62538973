package billing

import (
	"context"
	"encoding/json"
	"errors"
)

// WebStore is a web store's API as checkout and the portal use it: a port, made by the
// store's entry in the list of stores, so that checkout names no store.
type WebStore interface {
	// Provider is the store's name, under which what it reads back is applied.
	Provider() string
	// OwnsPrice says whether a price id of a plan's web_prices is this store's: a plan
	// lists every web store's prices, and each store sells only its own.
	OwnsPrice(id string) bool
	// PageOrigins are the origins of the store's checkout and portal pages, where the
	// account page's forms end up: its Content-Security-Policy must allow them.
	PageOrigins() []string
	// CreateCheckout starts a purchase and answers the page to send the buyer to.
	CreateCheckout(ctx context.Context, p Purchase) (string, error)
	// CreatePortal opens the customer's billing portal, returning to returnURL.
	CreatePortal(ctx context.Context, customer, returnURL string) (string, error)
	// ReadPurchase reads a started purchase back by the id its return carried:
	// ErrNoSuchPurchase when the store knows none by that id.
	ReadPurchase(ctx context.Context, id string) (PurchaseRead, error)
	// CustomerSubscriptions is a page of a customer's subscriptions, as the store's API
	// sends them, after the subscription after ("" for the first page).
	CustomerSubscriptions(ctx context.Context, customer, after string) (SubscriptionsPage, error)
}

// Purchase is a purchase to start: one price, for a user.
type Purchase struct {
	Price  string
	UserID string
	// Customer is the user's customer at the store when one is linked; else
	// CustomerEmail, if known, prefills the store's form.
	Customer      string
	CustomerEmail string
	SuccessURL    string
	CancelURL     string
}

// PurchaseRead is a started purchase read back: the user it was started for, the user
// its subscription names, and the subscription as the store's API sent it (nil until it
// made one). Pending: the store says the payment is still processing.
type PurchaseRead struct {
	StartedFor       string
	SubscriptionUser string
	Subscription     json.RawMessage
	Pending          bool
}

// SubscriptionsPage is one page of subscriptions as a store's API sent them.
type SubscriptionsPage struct {
	Subscriptions []json.RawMessage
	LastID        string
	HasMore       bool
}

// ErrNoSuchPurchase: the store knows no purchase by that id, or the id cannot be one.
var ErrNoSuchPurchase = errors.New("no such purchase")

// StatusOf is the HTTP status with which a store's API refused a call (0: it did not
// answer, or err is not a refusal), for logs that say nothing of the store's message.
func StatusOf(err error) int {
	var refusal interface{ HTTPStatus() int }
	if errors.As(err, &refusal) {
		return refusal.HTTPStatus()
	}
	return 0
}
