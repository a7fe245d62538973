package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"tollgate/internal/billing"
)

func (a *API) register(api huma.API) {
	huma.Register(api, huma.Operation{
		OperationID: "get-me",
		Method:      http.MethodGet,
		Path:        "/api/v1/me",
		Summary:     "The current user and their billing position",
		Description: "The user is built from the verified token's claims; billing comes from the entitlement surface, " +
			"the same whichever store sold the plan.",
		Tags:   []string{"account"},
		Errors: []int{http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}, a.me)

	huma.Register(api, huma.Operation{
		OperationID: "record-usage",
		Method:      http.MethodPost,
		Path:        "/api/v1/usage/{name}",
		Summary:     "Record usage of a metered entitlement",
		Description: "Adds `amount` (default 1) to the caller's counter for this billing period, atomically, " +
			"and refuses with 403 (type …/limit-exceeded) when that would pass the plan's limit or the plan has none. " +
			"This is the pattern for metered endpoints.",
		Tags:   []string{"usage"},
		Errors: []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}, a.recordUsage)
}

type meOutput struct {
	Body struct {
		User    User                `json:"user"`
		Billing billing.BillingView `json:"billing"`
	}
}

func (a *API) me(ctx context.Context, _ *struct{}) (*meOutput, error) {
	user, _ := CurrentUser(ctx)
	view, err := a.opts.Billing.View(ctx, user.ID)
	if err != nil {
		return nil, a.fail(ctx, err)
	}
	out := &meOutput{}
	out.Body.User = user
	out.Body.Billing = view
	return out, nil
}

type usageInput struct {
	Name string `path:"name" maxLength:"64" pattern:"^[A-Za-z0-9_.-]+$" doc:"The metered entitlement, e.g. projects."`
	Body *struct {
		Amount int64 `json:"amount,omitempty" minimum:"1" maximum:"1000000" default:"1" doc:"How much to add; 1 when omitted."`
	}
}

type usageOutput struct {
	Body billing.Usage
}

func (a *API) recordUsage(ctx context.Context, in *usageInput) (*usageOutput, error) {
	user, _ := CurrentUser(ctx)
	amount := int64(1)
	if in.Body != nil && in.Body.Amount != 0 {
		amount = in.Body.Amount
	}
	u, err := a.opts.Billing.RecordUsage(ctx, user.ID, in.Name, amount)
	if err != nil {
		return nil, a.fail(ctx, err)
	}
	return &usageOutput{Body: u}, nil
}
