package api

import (
	"context"

	"github.com/tollgate/tollgate/internal/billing/checkout"
)

type checkoutInput struct {
	Body struct {
		Plan       string `json:"plan" minLength:"1" maxLength:"100" doc:"The plan's key in the plans file, e.g. pro."`
		Price      string `json:"price,omitempty" maxLength:"255" doc:"One of the plan's web_prices; the first when omitted."`
		SuccessURL string `json:"success_url,omitempty" maxLength:"2048" doc:"Where the provider sends the buyer after paying: on PUBLIC_URL's origin or one of CHECKOUT_REDIRECT_ORIGINS. Default ${PUBLIC_URL}/?checkout=success."`
		CancelURL  string `json:"cancel_url,omitempty" maxLength:"2048" doc:"Where the provider sends a buyer who turns back; the same rule. Default ${PUBLIC_URL}/?checkout=cancel."`
	}
}

type sessionOutput struct {
	Body struct {
		URL string `json:"url" doc:"The provider's page to send the user to."`
	}
}

// checkout starts a web purchase for the token's user.
func (a *API) checkout(ctx context.Context, in *checkoutInput) (*sessionOutput, error) {
	user, _ := CurrentUser(ctx)
	url, err := a.opts.Checkout.Start(ctx, checkout.Buyer{UserID: user.ID, Email: user.Email}, checkout.Request{
		Plan: in.Body.Plan, Price: in.Body.Price, SuccessURL: in.Body.SuccessURL, CancelURL: in.Body.CancelURL,
	})
	return session(url, a.fail(ctx, err))
}

// portal opens the provider's customer portal for the token's user.
func (a *API) portal(ctx context.Context, _ *struct{}) (*sessionOutput, error) {
	user, _ := CurrentUser(ctx)
	url, err := a.opts.Checkout.Portal(ctx, user.ID)
	return session(url, a.fail(ctx, err))
}

func session(url string, err error) (*sessionOutput, error) {
	if err != nil {
		return nil, err
	}
	out := &sessionOutput{}
	out.Body.URL = url
	return out, nil
}
