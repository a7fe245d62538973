package stripe

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/tollgate/tollgate/internal/billing"
)

// WebStore is the client as checkout and the portal use it: Checkout Sessions, the
// customer portal, and a customer's subscriptions.
func WebStore(c *Client) billing.WebStore { return webStore{c} }

type webStore struct{ c *Client }

func (w webStore) PageOrigins() []string { return PageOrigins(w.c.cfg.Base) }

func (webStore) Provider() string { return billing.ProviderWeb }

// OwnsPrice: every price of a plan's web_prices is this store's; a web store added
// beside it says which of them are its own.
func (webStore) OwnsPrice(string) bool { return true }

func (w webStore) CreateCheckout(ctx context.Context, p billing.Purchase) (string, error) {
	return w.c.CreateCheckout(ctx, Checkout{Price: p.Price, UserID: p.UserID, Customer: p.Customer, CustomerEmail: p.CustomerEmail,
		SuccessURL: p.SuccessURL, CancelURL: p.CancelURL})
}

func (w webStore) CreatePortal(ctx context.Context, customer, returnURL string) (string, error) {
	return w.c.CreatePortal(ctx, customer, returnURL)
}

// ReadPurchase reads the Checkout Session and its subscription: pending while the
// subscription is still incomplete (the payment processing), or not made yet.
func (w webStore) ReadPurchase(ctx context.Context, id string) (billing.PurchaseRead, error) {
	session, err := w.c.CheckoutSession(ctx, id)
	if errors.Is(err, ErrNoSuchSession) {
		return billing.PurchaseRead{}, billing.ErrNoSuchPurchase
	}
	if err != nil {
		return billing.PurchaseRead{}, err
	}
	read := billing.PurchaseRead{StartedFor: session.ClientReferenceID, SubscriptionUser: session.SubscriptionUser(),
		Subscription: session.Subscription, Pending: session.Subscription == nil}
	var sub struct {
		Status string `json:"status"`
	}
	if session.Subscription != nil && json.Unmarshal(session.Subscription, &sub) == nil {
		read.Pending = sub.Status == "incomplete"
	}
	return read, nil
}

func (w webStore) CustomerSubscriptions(ctx context.Context, customer, after string) (billing.SubscriptionsPage, error) {
	page, err := w.c.Subscriptions(ctx, SubscriptionQuery{Customer: customer, StartingAfter: after})
	return billing.SubscriptionsPage{Subscriptions: page.Subscriptions, LastID: page.LastID, HasMore: page.HasMore}, err
}
