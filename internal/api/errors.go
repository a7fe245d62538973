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

// statusOf is the status of each kind of billing's answers.
var statusOf = map[billing.Kind]int{
	billing.KindInvalid:      http.StatusUnprocessableEntity,
	billing.KindNotFound:     http.StatusNotFound,
	billing.KindConflict:     http.StatusConflict,
	billing.KindRefused:      http.StatusForbidden,
	billing.KindUnconfigured: http.StatusNotImplemented,
}

// problemFor is the API's one mapping of errors to answers. Apart from huma's own request
// validation (422) and the throttles' 429, every status /api/* gives comes from here; an
// error it does not know is the database's or a dependency's, and says nothing of itself.
func problemFor(err error) *apiProblem {
	p := func(status int, kind, title, detail string) *apiProblem {
		return &apiProblem{Problem: problem.Problem{Type: problem.TypeBase + kind, Title: title, Status: status, Detail: detail}}
	}
	if e := billing.AsError(err); e != nil {
		return p(statusOf[e.Kind()], e.Code, e.Title, e.Detail)
	}
	switch billing.KindOf(err) {
	case billing.KindUnresolved: // the only one the API meets: a reported purchase's product
		return p(http.StatusUnprocessableEntity, "unmapped-product", "Product on no plan", "The purchase's product is on no plan of this server.")
	case billing.KindProviderFailed:
		return p(http.StatusBadGateway, "provider-error", "Payment provider error", "The payment provider could not start the session; try again shortly.")
	}
	switch {
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
