package playstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/api/androidpublisher/v3"

	"github.com/tollgate/tollgate/internal/billing"
)

// subscriptionRead is a subscription purchase as ReadSubscription read it from Google;
// Unknown: Google does not know its token.
type subscriptionRead struct {
	Token    string                                   `json:"token"`
	Purchase *androidpublisher.SubscriptionPurchaseV2 `json:"purchase,omitempty"`
	Unknown  bool                                     `json:"unknown,omitempty"`
}

// ReadSubscription reads the subscription purchase of token (subscriptionsv2.get), as the
// JSON ReadSnapshot reads; nil for a one-time product's purchase (state, as stored, says
// which), which that API does not answer for.
func (a *Adapter) ReadSubscription(ctx context.Context, token string, stored []byte) (json.RawMessage, error) {
	var s state
	if len(stored) > 0 {
		if err := json.Unmarshal(stored, &s); err != nil {
			return nil, fmt.Errorf("the stored state of a play purchase: %w", err)
		}
	}
	if s.OneTime {
		return nil, nil
	}
	read := subscriptionRead{Token: token}
	purchase, err := a.api.subscription(ctx, token)
	switch {
	case errors.Is(err, errUnknownToken):
		read.Unknown = true
	case err != nil:
		return nil, err
	default:
		read.Purchase = purchase
	}
	return json.Marshal(read)
}

// ReadSnapshot reads a subscription purchase as ReadSubscription gives it, as the state of
// the purchase at read, the time it was read: exactly as a push's purchase is read.
func (a *Adapter) ReadSnapshot(raw []byte, read time.Time) (billing.Reading, billing.SnapshotInfo, error) {
	var r subscriptionRead
	if err := json.Unmarshal(raw, &r); err != nil {
		return billing.Reading{}, billing.SnapshotInfo{}, fmt.Errorf("a play subscription read: %w", err)
	}
	info := billing.SnapshotInfo{Subscription: r.Token}
	switch {
	case r.Unknown:
		return billing.Reading{}, info, errUnknownToken
	case r.Purchase == nil || r.Token == "":
		return billing.Reading{}, info, errors.New("a play subscription read without its purchase")
	}
	if ids := r.Purchase.ExternalAccountIdentifiers; ids != nil {
		info.Customer = ids.ObfuscatedExternalAccountId
	}
	read = read.UTC().Truncate(time.Millisecond)
	p := &parsed{id: billing.SnapshotEventID(read), purchase: r.Purchase, read: read,
		notification: notification{SubscriptionNotification: &subscriptionNotification{PurchaseToken: r.Token}}}
	return billing.Reading{
		Subscription: r.Token, Type: billing.SnapshotEventType, At: read, Snapshot: true, Customer: info.Customer,
		Decoded: p, Replaces: replaced(r.Purchase),
	}, info, nil
}
