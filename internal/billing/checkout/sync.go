package checkout

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Applier applies a subscription read from the provider's API, as a backfill of one: the
// pipeline.
type Applier interface {
	ApplyRead(ctx context.Context, provider string, raw json.RawMessage) (pipeline.BackfillChange, error)
}

// syncPages bounds how many pages of a customer's subscriptions one sync reads: a person
// is waiting, and a customer has a handful.
const syncPages = 3

// Synced is how a sync ended: Pending while the provider says the payment is still
// processing (no subscription yet, or one still incomplete).
type Synced struct {
	Pending bool
}

// Sync reads the user's purchase back from the provider and applies it at once, so that
// the buyer's next answer has it whether or not its webhook has arrived: the checkout
// session sessionID and its subscription, or, without one, every subscription of the
// user's web customer. A session is the user's when its client_reference_id (which Start
// sets) or its subscription's metadata.user_id names them; any other session, or one the
// provider does not know, is ErrCheckoutOfAnother and nothing is applied.
func (s *Checkout) Sync(ctx context.Context, userID, sessionID string) (Synced, error) {
	store, err := s.storeFor(billing.ProviderWeb) // the web provider's checkout is read back; another store's webhooks bring it
	if err != nil || s.applier == nil {
		return Synced{}, billing.ErrCheckoutUnavailable
	}
	if sessionID == "" {
		return Synced{}, s.syncCustomer(ctx, store, userID)
	}
	read, err := store.ReadPurchase(ctx, sessionID)
	switch {
	case errors.Is(err, billing.ErrNoSuchPurchase):
		return Synced{}, billing.ErrCheckoutOfAnother
	case err != nil:
		return Synced{}, s.providerFailure(ctx, "checkout read", err)
	case read.StartedFor != userID && read.SubscriptionUser != userID:
		return Synced{}, billing.ErrCheckoutOfAnother
	case read.Subscription == nil:
		return Synced{Pending: true}, nil
	}
	if _, err := s.applier.ApplyRead(ctx, store.Provider(), read.Subscription); err != nil {
		return Synced{}, err
	}
	return Synced{Pending: read.Pending}, nil
}

// syncCustomer applies every subscription of the user's web customer, if one is linked.
func (s *Checkout) syncCustomer(ctx context.Context, store billing.WebStore, userID string) error {
	var customer string
	err := s.db.Request(ctx, func(ctx context.Context) error {
		var err error
		customer, err = webCustomerOf(ctx, dbq.New(s.db), userID)
		return err
	}, nil)
	if err != nil || customer == "" {
		return err
	}
	after := ""
	for range syncPages {
		page, err := store.CustomerSubscriptions(ctx, customer, after)
		if err != nil {
			return s.providerFailure(ctx, "subscriptions read", err)
		}
		for _, raw := range page.Subscriptions {
			if _, err := s.applier.ApplyRead(ctx, store.Provider(), raw); err != nil {
				return err
			}
		}
		if !page.HasMore {
			return nil
		}
		after = page.LastID
	}
	return nil
}
