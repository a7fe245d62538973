package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/problem"
)

// Refusals of the /api/* middleware and handlers. Each maps to one answer in problemFor.
var (
	errNoToken     = errors.New("no bearer token")
	errBadToken    = errors.New("the bearer token is malformed, invalid or expired")
	errSeveralAuth = errors.New("several Authorization headers")
	errNoRoute     = errors.New("no such API endpoint")
	errUserOnly    = errors.New("a service key on an operation for user tokens")
	errServiceOnly = errors.New("a user token on an operation for service keys")
)

// problemFor is the API's one mapping of errors to answers. Apart from huma's own request
// validation (422) and the throttles' 429, every status /api/* gives comes from here; an
// error it does not know is the database's or a dependency's, and says nothing of itself.
func problemFor(err error) *apiProblem {
	p := func(status int, kind, title, detail string) *apiProblem {
		return &apiProblem{Problem: problem.Problem{Type: problem.TypeBase + kind, Title: title, Status: status, Detail: detail}}
	}
	switch {
	case errors.Is(err, billing.ErrLimitExceeded):
		return p(http.StatusForbidden, "limit-exceeded", "Limit exceeded", "This would exceed the plan's limit for this period; nothing was recorded.")
	case errors.Is(err, billing.ErrNotEntitled):
		return p(http.StatusForbidden, "not-entitled", "Not entitled", "The current plan does not include this.")
	case errors.Is(err, billing.ErrUnknownPlan):
		return p(http.StatusUnprocessableEntity, "invalid-checkout", "Unknown plan", "There is no such plan.")
	case errors.Is(err, billing.ErrPlanNotOnWeb):
		return p(http.StatusUnprocessableEntity, "invalid-checkout", "Not sold on the web", "This plan has no web prices to buy.")
	case errors.Is(err, billing.ErrForeignPrice):
		return p(http.StatusUnprocessableEntity, "invalid-checkout", "Price not in plan", "The price is not one of the plan's web prices.")
	case errors.Is(err, billing.ErrRedirectOrigin):
		return p(http.StatusUnprocessableEntity, "invalid-checkout", "Redirect not allowed",
			"success_url and cancel_url must be absolute URLs on this service's origin or one of CHECKOUT_REDIRECT_ORIGINS.")
	case errors.Is(err, billing.ErrManagedInApp):
		return p(http.StatusConflict, "managed-in-app", "Managed in the app", billing.ManagedInAppMessage)
	case errors.Is(err, billing.ErrAlreadySubscribed):
		return p(http.StatusConflict, "already-subscribed", "Already subscribed", "A subscription already entitles you to this plan; manage it in the billing portal.")
	case errors.Is(err, billing.ErrNoWebCustomer):
		return p(http.StatusNotFound, "no-billing-account", "No billing account", "There is no web billing account to manage yet.")
	case errors.Is(err, billing.ErrCheckoutUnavailable):
		return p(http.StatusNotImplemented, "checkout-unavailable", "Checkout unavailable", "Web purchases are not configured on this server.")
	case errors.Is(err, billing.ErrCheckoutOfAnother):
		return p(http.StatusForbidden, "checkout-of-another", "Not your checkout", "This checkout session is not yours; nothing was applied.")
	case errors.Is(err, billing.ErrPurchaseOfAnother):
		return p(http.StatusConflict, "purchase-of-another", "Another user's purchase", "This purchase is linked to another user; nothing changed.")
	case errors.Is(err, billing.ErrUnverifiedPurchase):
		return p(http.StatusUnprocessableEntity, "unverified-purchase", "Purchase not verified", "The store does not vouch for this purchase.")
	case errors.Is(err, billing.ErrUnknownStore):
		return p(http.StatusUnprocessableEntity, "unknown-store", "Store not configured", "This server does not hear that store.")
	case errors.As(err, new(*billing.Unresolved)):
		return p(http.StatusUnprocessableEntity, "unmapped-product", "Product on no plan", "The purchase's product is on no plan of this server.")
	case errors.As(err, new(*billing.ProviderError)):
		return p(http.StatusBadGateway, "provider-error", "Payment provider error", "The payment provider could not start the session; try again shortly.")
	case errors.Is(err, errNoToken):
		return p(http.StatusUnauthorized, "unauthorized", "Unauthorized", "A bearer token is required.").challenge(false)
	case errors.Is(err, errSeveralAuth):
		return p(http.StatusUnauthorized, "unauthorized", "Unauthorized", "Send one Authorization header, not several.").challenge(true)
	case errors.Is(err, errBadToken):
		return p(http.StatusUnauthorized, "unauthorized", "Unauthorized", "The bearer token is invalid or expired.").challenge(true)
	case errors.Is(err, errUserOnly):
		return p(http.StatusForbidden, "forbidden", "Forbidden", "This operation needs a user's token; a service key acts through /api/v1/users/{user_id}/….")
	case errors.Is(err, errServiceOnly):
		return p(http.StatusForbidden, "forbidden", "Forbidden", "This operation needs a service key (tgk_…); a user's token cannot act for other users.")
	case errors.Is(err, errNoRoute):
		return p(http.StatusNotFound, "not-found", "Not Found", "There is no such API endpoint.")
	case errors.Is(err, ErrNoIdentityService):
		return p(http.StatusServiceUnavailable, "not-configured", "Service Unavailable", "No identity service is configured on this server (AUTH_URL), so no token can be checked.")
	case errors.Is(err, ErrNoKeySet):
		return p(http.StatusServiceUnavailable, "unavailable", "Service Unavailable", "Sign-in keys are not available yet; retry shortly.").retryAfter(5)
	}
	return p(http.StatusServiceUnavailable, "unavailable", "Service Unavailable", "The request could not be completed; retry shortly.").retryAfter(5)
}

// Problem is the answer an operation returns for err: what problemFor maps it to.
func Problem(err error) error { return problemFor(err) }

// fail is what a handler returns for err: its problem. Failures of the database are logged
// once per outage by the database itself; here they are a debug line.
func (a *API) fail(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	p := problemFor(err)
	if p.Status >= http.StatusInternalServerError {
		a.opts.Log.DebugContext(ctx, "api request failed", "error", err)
	}
	return p
}

// writeError answers err outside huma (the middleware), the same way.
func writeError(w http.ResponseWriter, err error) {
	p := problemFor(err)
	problem.Send(w, p.Problem, p.headers)
}

// apiProblem is an RFC 9457 problem with its headers, which huma sends as handlers return it.
type apiProblem struct {
	problem.Problem
	headers http.Header
}

// challenge adds RFC 6750's WWW-Authenticate: error="invalid_token" only when a token was sent.
func (p *apiProblem) challenge(tokenSent bool) *apiProblem {
	value := `Bearer realm="api"`
	if tokenSent {
		value += `, error="invalid_token"`
	}
	return p.with("WWW-Authenticate", value)
}

func (p *apiProblem) retryAfter(seconds int) *apiProblem {
	return p.with("Retry-After", strconv.Itoa(seconds))
}

func (p *apiProblem) with(key, value string) *apiProblem {
	if p.headers == nil {
		p.headers = http.Header{}
	}
	p.headers.Set(key, value)
	return p
}

func (p *apiProblem) Error() string             { return p.Title }
func (p *apiProblem) GetStatus() int            { return p.Status }
func (p *apiProblem) ContentType(string) string { return "application/problem+json" }
func (p *apiProblem) GetHeaders() http.Header   { return p.headers }
