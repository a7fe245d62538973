package appstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
)

// Subscription statuses of Get All Subscription Statuses.
const (
	StatusActive       = 1
	StatusExpired      = 2
	StatusBillingRetry = 3
	StatusGracePeriod  = 4
	StatusRevoked      = 5
)

// SubscriptionStatus is what Apple says of one subscription now: its status, and its
// latest transaction and renewal information, verified.
type SubscriptionStatus struct {
	OriginalTransactionID string
	Status                int
	transaction           transaction
	renewal               renewal
}

var errNoSuchSubscription = errors.New("Apple's answer holds no subscription of that original transaction")

// SubscriptionStatus reads the subscription of originalTransactionID (Get All Subscription
// Statuses): the lastTransactions item of that original transaction, its signed
// transaction and renewal verified as a notification's are, for this app and the API's
// environment.
func (c *API) SubscriptionStatus(ctx context.Context, originalTransactionID string) (SubscriptionStatus, error) {
	var answer struct {
		Environment string `json:"environment"`
		BundleID    string `json:"bundleId"`
		Data        []struct {
			LastTransactions []struct {
				Status                int    `json:"status"`
				OriginalTransactionID string `json:"originalTransactionId"`
				SignedTransactionInfo string `json:"signedTransactionInfo"`
				SignedRenewalInfo     string `json:"signedRenewalInfo"`
			} `json:"lastTransactions"`
		} `json:"data"`
	}
	if err := c.do(ctx, "GET", "/inApps/v1/subscriptions/"+url.PathEscape(originalTransactionID), nil, &answer); err != nil {
		return SubscriptionStatus{}, err
	}
	for _, group := range answer.Data {
		for _, last := range group.LastTransactions {
			if last.OriginalTransactionID != originalTransactionID {
				continue
			}
			s := SubscriptionStatus{OriginalTransactionID: originalTransactionID, Status: last.Status}
			if err := c.verifyItem(last.SignedTransactionInfo, &s.transaction); err != nil {
				return SubscriptionStatus{}, err
			}
			if s.transaction.BundleID != c.adapter.bundleID {
				return SubscriptionStatus{}, fmt.Errorf("a subscription status refused: %w", errBundle)
			}
			if s.transaction.Environment != c.cfg.Environment || s.transaction.OriginalTransactionID != originalTransactionID {
				return SubscriptionStatus{}, fmt.Errorf("a subscription status refused: the transaction is of another environment or subscription")
			}
			if last.SignedRenewalInfo != "" {
				if err := c.verifyItem(last.SignedRenewalInfo, &s.renewal); err != nil {
					return SubscriptionStatus{}, err
				}
			}
			return s, nil
		}
	}
	return SubscriptionStatus{}, errNoSuchSubscription
}

// verifyItem verifies one signed item of an answer and decodes it into into.
func (c *API) verifyItem(jws string, into any) error {
	if err := c.adapter.verifier.verify(jws, into, c.cfg.Clock()); err != nil {
		return fmt.Errorf("a signed item refused: %w", err)
	}
	return nil
}
