package appstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/tollgate/tollgate/internal/billing"
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
// Its JSON is what ReadSubscription gives and ReadSnapshot reads.
type SubscriptionStatus struct {
	OriginalTransactionID string      `json:"original_transaction_id"`
	Status                int         `json:"status"`
	Transaction           transaction `json:"transaction"`
	Renewal               renewal     `json:"renewal"`
	// Refused, in what ReadSubscription gives, is why the status Apple's API answered did
	// not verify: nothing of it is used.
	Refused string `json:"refused,omitempty"`
}

// ErrRefusedStatus: a status in Apple's answer did not verify (a signed item, the app, the
// environment or the subscription it names).
var ErrRefusedStatus = errors.New("a subscription status refused")

// ErrUnknownSubscription: the API's environment holds no subscription of that original
// transaction (Apple's 404 with 4040005 or 4040010, or none, or an answer without it).
// Apple's "not found, try again" codes are not this: once the tries are spent they are a
// read that failed, which a later pass makes again.
var ErrUnknownSubscription = errors.New("the App Store holds no subscription of that original transaction in this environment")

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
	err := c.do(ctx, "GET", "/inApps/v1/subscriptions/"+url.PathEscape(originalTransactionID), nil, &answer)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound && !apiErr.retryable() && !errors.Is(err, billing.ErrAPIRefused) {
		return SubscriptionStatus{}, ErrUnknownSubscription
	}
	if err != nil {
		return SubscriptionStatus{}, err
	}
	for _, group := range answer.Data {
		for _, last := range group.LastTransactions {
			if last.OriginalTransactionID != originalTransactionID {
				continue
			}
			s := SubscriptionStatus{OriginalTransactionID: originalTransactionID, Status: last.Status}
			if err := c.verifyItem(last.SignedTransactionInfo, &s.Transaction); err != nil {
				return SubscriptionStatus{}, err
			}
			if s.Transaction.BundleID != c.adapter.bundleID {
				return SubscriptionStatus{}, fmt.Errorf("%w: %w", ErrRefusedStatus, errBundle)
			}
			if s.Transaction.Environment != c.cfg.Environment || s.Transaction.OriginalTransactionID != originalTransactionID {
				return SubscriptionStatus{}, fmt.Errorf("%w: the transaction is of another environment or subscription", ErrRefusedStatus)
			}
			if last.SignedRenewalInfo != "" {
				if err := c.verifyItem(last.SignedRenewalInfo, &s.Renewal); err != nil {
					return SubscriptionStatus{}, err
				}
			}
			return s, nil
		}
	}
	return SubscriptionStatus{}, ErrUnknownSubscription
}

// ReadSubscription is SubscriptionStatus as the JSON the adapter's ReadSnapshot reads: the
// verified status, never anything Apple sent unverified. A status that does not verify is
// read as refused (ReadSnapshot's error says why), so that a pass goes on past it.
func (c *API) ReadSubscription(ctx context.Context, originalTransactionID string) (json.RawMessage, error) {
	s, err := c.SubscriptionStatus(ctx, originalTransactionID)
	if errors.Is(err, ErrRefusedStatus) {
		s = SubscriptionStatus{OriginalTransactionID: originalTransactionID, Refused: err.Error()}
	} else if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// verifyItem verifies one signed item of an answer and decodes it into into.
func (c *API) verifyItem(jws string, into any) error {
	if err := c.adapter.verifier.verify(jws, into, c.cfg.Clock()); err != nil {
		return fmt.Errorf("%w: a signed item: %w", ErrRefusedStatus, err)
	}
	return nil
}
