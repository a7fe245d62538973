package api

import (
	"context"

	"github.com/tollgate/tollgate/internal/billing"
)

// meOutput is what GET /api/v1/me answers. It describes the operation; the answer itself
// is written from its two parts already encoded (encodedJSON).
type meOutput struct {
	Body struct {
		User    User                `json:"user"`
		Billing billing.BillingView `json:"billing"`
	}
}

var (
	meUser    = []byte(`{"user":`)
	meBilling = []byte(`,"billing":`)
	meEnd     = []byte(`}`)
)

// me answers from the user encoded when their token was verified and the billing view kept
// encoded with their answer: what a bare handler writing those bytes would do.
func (a *API) me(ctx context.Context, _ *struct{}) (*encodedOutput, error) {
	c := credentialOf(ctx)
	view, err := a.opts.Billing.ViewJSON(ctx, c.user.ID)
	if err != nil {
		return nil, a.fail(ctx, err)
	}
	user := c.userJSON
	if user == nil { // a user set by other means than the token cache: encode it here
		if user, err = encodeJSON(c.user); err != nil {
			return nil, a.fail(ctx, err)
		}
	}
	return encodedJSON(meUser, user, meBilling, view, meEnd), nil
}

type usageInput struct {
	Name string `path:"name" maxLength:"64" pattern:"^[A-Za-z0-9_.-]+$" doc:"The metered entitlement, e.g. projects."`
	Body *usageInputBody
}

type usageInputBody struct {
	Amount int64 `json:"amount,omitempty" minimum:"1" maximum:"1000000" default:"1" doc:"How much to add; 1 when omitted."`
}

type usageOutput struct {
	Body billing.Usage
}

func (a *API) recordUsage(ctx context.Context, in *usageInput) (*usageOutput, error) {
	user, _ := CurrentUser(ctx)
	return a.record(ctx, user.ID, in)
}

// record is POST …/usage/{name} for userID, the token holder's or a service key's choice.
func (a *API) record(ctx context.Context, userID string, in *usageInput) (*usageOutput, error) {
	amount := int64(1)
	if in.Body != nil && in.Body.Amount != 0 {
		amount = in.Body.Amount
	}
	u, err := a.opts.Billing.RecordUsage(ctx, userID, in.Name, amount)
	if err != nil {
		return nil, a.fail(ctx, err)
	}
	return &usageOutput{Body: u}, nil
}

// userPath names the user a service-key operation is about.
type userPath struct {
	UserID string `path:"user_id" format:"uuid" doc:"The identity user's id (the sub of their tokens)."`
}

// userEntitlementsOutput describes GET …/users/{user_id}/entitlements, which answers with
// the view kept encoded (encodedJSON).
type userEntitlementsOutput struct {
	Body billing.BillingView
}

// userEntitlements is the billing object /api/v1/me gives, for any user: a user tollgate
// has never seen gets the default plan, not subscribed.
func (a *API) userEntitlements(ctx context.Context, in *userPath) (*encodedOutput, error) {
	view, err := a.opts.Billing.ViewJSON(ctx, in.UserID)
	if err != nil {
		return nil, a.fail(ctx, err)
	}
	return encodedJSON(view), nil
}

// userUsageInput is usageInput for the user named in the path. (huma reads only the
// fields of the input struct itself, not of an embedded one.)
type userUsageInput struct {
	UserID string `path:"user_id" format:"uuid" doc:"The identity user's id (the sub of their tokens)."`
	Name   string `path:"name" maxLength:"64" pattern:"^[A-Za-z0-9_.-]+$" doc:"The metered entitlement, e.g. projects."`
	Body   *usageInputBody
}

func (a *API) recordUserUsage(ctx context.Context, in *userUsageInput) (*usageOutput, error) {
	return a.record(ctx, in.UserID, &usageInput{Name: in.Name, Body: in.Body})
}
