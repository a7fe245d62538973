package appstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// claimed is the notification type a transaction the app reports is read as.
const claimed = "TRANSACTION"

// Claim verifies a signed transaction the app holds (StoreKit's jwsRepresentation) as a
// notification's is verified, for this app and an applied environment, and reads it as the
// subscription's state when Apple signed it, linked to userID. A transaction whose
// appAccountToken names another user is refused.
func (a *Adapter) Claim(_ context.Context, proof billing.Proof, userID string, now time.Time) (billing.Reading, error) {
	var tx transaction
	if proof.SignedTransaction == "" {
		return billing.Reading{}, fmt.Errorf("%w: no signed_transaction", billing.ErrUnverifiedPurchase)
	}
	if err := a.verifier.verify(proof.SignedTransaction, &tx, now); err != nil {
		return billing.Reading{}, fmt.Errorf("%w: %v", billing.ErrUnverifiedPurchase, err)
	}
	switch {
	case tx.BundleID != a.bundleID:
		return billing.Reading{}, fmt.Errorf("%w: %v", billing.ErrUnverifiedPurchase, errBundle)
	case !slices.Contains(a.environments, tx.Environment):
		return billing.Reading{}, fmt.Errorf("%w: a %s transaction, not applied here", billing.ErrUnverifiedPurchase, tx.Environment)
	case tx.OriginalTransactionID == "" || tx.SignedDate <= 0:
		return billing.Reading{}, fmt.Errorf("%w: the transaction has no originalTransactionId or signedDate", billing.ErrUnverifiedPurchase)
	case tx.AppAccountToken != "" && !strings.EqualFold(tx.AppAccountToken, userID):
		return billing.Reading{}, billing.ErrPurchaseOfAnother
	}
	if tx.Type == typeConsumable {
		return billing.Reading{Ignore: "a consumable purchase entitles nothing"}, nil
	}
	tx.AppAccountToken = userID
	return billing.Reading{
		Subscription: tx.OriginalTransactionID, Type: billing.SnapshotEventType, At: time.UnixMilli(tx.SignedDate).UTC(),
		Snapshot: true, Customer: userID, Decoded: &parsed{notification: notification{NotificationType: claimed}, transaction: tx},
	}, nil
}
