package api

import (
	"context"

	"github.com/tollgate/tollgate/internal/billing/checkout"
)

type checkoutInput struct {
	Body struct {
		Plan       string `json:"plan" minLength:"1" maxLength:"100" doc:"The plan's key in the plans file, e.g. pro."`
		Provider   string `json:"provider,omitempty" maxLength:"100" doc:"The web store to buy at, by its provider name: by default the web provider when WEB_API_KEY is set, else the only web store set up. 422 unknown-store for a name this server does not know; 501 for one not set up."`
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
		Provider: in.Body.Provider, Plan: in.Body.Plan, Price: in.Body.Price, SuccessURL: in.Body.SuccessURL, CancelURL: in.Body.CancelURL,
	})
	return session(url, a.fail(ctx, err))
}

// portalInput optionally names the web store.
type portalInput struct {
	Body *struct {
		_        struct{} `json:"-" additionalProperties:"true"` // other fields, as before there was a body, are ignored
		Provider string   `json:"provider,omitempty" maxLength:"100" doc:"The web store whose portal to open, chosen as for checkout."`
	} `required:"false"`
}

// portal opens a web store's customer portal for the token's user.
func (a *API) portal(ctx context.Context, in *portalInput) (*sessionOutput, error) {
	user, _ := CurrentUser(ctx)
	provider := ""
	if in.Body != nil {
		provider = in.Body.Provider
	}
	url, err := a.opts.Checkout.Portal(ctx, user.ID, provider)
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
