package stripe

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"

	stripego "github.com/stripe/stripe-go/v84"
)

// CheckoutSession is a Checkout Session as read back after the buyer returns: whose it
// is, and the subscription it made (nil until it made one), whose status says how the
// payment stands.
type CheckoutSession struct {
	ID                string
	ClientReferenceID string
	// Subscription is the subscription object, read with the session, or nil.
	Subscription json.RawMessage
}

// SubscriptionUser is the user the session's subscription names in metadata.user_id.
func (s CheckoutSession) SubscriptionUser() string {
	var sub struct {
		Metadata map[string]string `json:"metadata"`
	}
	if len(s.Subscription) == 0 || json.Unmarshal(s.Subscription, &sub) != nil {
		return ""
	}
	return sub.Metadata["user_id"]
}

// ErrNoSuchSession: the provider knows no checkout session by that id, or the id cannot
// be one.
var ErrNoSuchSession = errors.New("no such checkout session")

var sessionID = regexp.MustCompile(`^cs_[A-Za-z0-9_]{1,255}$`)

// CheckoutSession reads a Checkout Session with its subscription expanded, retrying as
// reads do, within the time a waiting person is given.
func (c *Client) CheckoutSession(ctx context.Context, id string) (CheckoutSession, error) {
	if !sessionID.MatchString(id) {
		return CheckoutSession{}, ErrNoSuchSession
	}
	ctx, cancel := context.WithTimeout(ctx, sessionTimeout)
	defer cancel()
	params := &stripego.CheckoutSessionParams{}
	params.AddExpand("subscription")
	var raw struct {
		stripego.APIResource
		ID                string          `json:"id"`
		ClientReferenceID *string         `json:"client_reference_id"`
		Subscription      json.RawMessage `json:"subscription"`
	}
	err := c.retrying(ctx, func() error {
		return c.call(ctx, http.MethodGet, "/v1/checkout/sessions/"+id, params, &raw)
	})
	var failure *Error
	if errors.As(err, &failure) && failure.Status == http.StatusNotFound {
		return CheckoutSession{}, ErrNoSuchSession
	}
	if err != nil {
		return CheckoutSession{}, err
	}
	s := CheckoutSession{ID: raw.ID}
	if raw.ClientReferenceID != nil {
		s.ClientReferenceID = *raw.ClientReferenceID
	}
	if len(raw.Subscription) > 0 && raw.Subscription[0] == '{' { // expanded; a bare id or null is none
		s.Subscription = raw.Subscription
	}
	return s, nil
}
