package playstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/api/androidpublisher/v3"

	"github.com/tollgate/tollgate/internal/billing"
)

// Claim reads a purchase the app reports (its token and product) from Google, at now, as
// the subscription's state, linked to userID. A token Google does not know, or one for
// another product, is unverified; one whose obfuscated account id is another user's is
// refused.
func (a *Adapter) Claim(ctx context.Context, proof billing.Proof, userID string, now time.Time) (billing.Reading, error) {
	if proof.PurchaseToken == "" || proof.ProductID == "" {
		return billing.Reading{}, fmt.Errorf("%w: purchase_token and product_id are required", billing.ErrUnverifiedPurchase)
	}
	purchase, err := a.api.subscription(ctx, proof.PurchaseToken)
	switch {
	case errors.Is(err, errUnknownToken):
		return billing.Reading{}, fmt.Errorf("%w: %v", billing.ErrUnverifiedPurchase, err)
	case err != nil:
		return billing.Reading{}, err
	}
	if !slices.ContainsFunc(purchase.LineItems, func(item *androidpublisher.SubscriptionPurchaseLineItem) bool {
		return item.ProductId == proof.ProductID
	}) {
		return billing.Reading{}, fmt.Errorf("%w: the purchase is not of %s", billing.ErrUnverifiedPurchase, proof.ProductID)
	}
	ids := purchase.ExternalAccountIdentifiers
	if ids != nil && ids.ObfuscatedExternalAccountId != "" && !strings.EqualFold(ids.ObfuscatedExternalAccountId, userID) {
		return billing.Reading{}, billing.ErrPurchaseOfAnother
	}
	if ids == nil {
		ids = &androidpublisher.ExternalAccountIdentifiers{}
		purchase.ExternalAccountIdentifiers = ids
	}
	ids.ObfuscatedExternalAccountId = userID
	p := &parsed{purchase: purchase, read: now.UTC().Truncate(time.Millisecond)}
	p.notification.SubscriptionNotification = &subscriptionNotification{PurchaseToken: proof.PurchaseToken, SubscriptionID: proof.ProductID}
	return billing.Reading{
		Subscription: proof.PurchaseToken, Type: billing.SnapshotEventType, At: p.read, Snapshot: true, Customer: userID, Decoded: p,
		Replaces: replaced(purchase),
	}, nil
}
