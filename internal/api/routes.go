// Package api is API mode: /api/v1, guarded by identity-service JWTs verified
// against its JWKS on every request, behind per-IP and per-token throttles, with CORS, an
// OpenAPI description and embedded API docs.
package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/checkout"
	"github.com/tollgate/tollgate/internal/billing/grants"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/heldanswers"
	"github.com/tollgate/tollgate/internal/knownusers"
	"github.com/tollgate/tollgate/internal/ratelimit"
	"github.com/tollgate/tollgate/internal/route"
	"github.com/tollgate/tollgate/internal/servicekeys"
)

// Purchases verifies and applies a purchase an app reports for its user.
type Purchases interface {
	Claim(ctx context.Context, store string, proof billing.Proof, userID string) error
}

// Options wires the API to its collaborators.
type Options struct {
	// Billing answers billing questions; Checkout starts purchases and opens the portal.
	Billing  *reader.Reader
	Checkout *checkout.Checkout
	// Purchases applies the purchases apps report (POST /api/v1/billing/purchases) to
	// the stores named in PurchaseStores, the values its "store" takes.
	Purchases      Purchases
	PurchaseStores []string
	// Grants makes, lists and revokes grants (the service routes …/users/{user_id}/grants).
	Grants *grants.Grants
	// HeldAnswers signs entitlement tokens (…/entitlements/token).
	HeldAnswers *heldanswers.Issuer
	Verifier    *Verifier
	// Users records the users whose tokens are verified, once per session; nil records none.
	Users *knownusers.Recorder
	// Keys checks service keys; nil admits none.
	Keys      *servicekeys.Keys
	Throttles *ratelimit.Throttles
	// PerIP and PerToken default to ratelimit.PerIP and ratelimit.PerToken.
	PerIP, PerToken ratelimit.Limit
	CORS            CORS
	SwaggerUI       bool
	Log             *slog.Logger
}

// API serves /api/* and /api-docs.
type API struct {
	opts  Options
	inner *http.ServeMux
	huma  huma.API
}

// New builds the API with tollgate's own operations registered.
func New(opts Options) *API {
	if opts.PerIP.Requests == 0 {
		opts.PerIP = ratelimit.PerIP
	}
	if opts.PerToken.Requests == 0 {
		opts.PerToken = ratelimit.PerToken
	}
	a := &API{opts: opts, inner: http.NewServeMux()}
	a.huma = humago.New(a.inner, Config())
	a.huma.OpenAPI().OnAddOperation = append(a.huma.OpenAPI().OnAddOperation, refuseOutsideV1)
	a.register(a.huma)
	return a
}

// refuseOutsideV1 panics, at start-up, on an operation whose path is not under /api/v1/:
// only /api/* reaches the API's mux, so it would answer nothing but 404, silently.
// net/http's mux panics on a bad pattern the same way.
func refuseOutsideV1(_ *huma.OpenAPI, op *huma.Operation) {
	if !strings.HasPrefix(op.Path, "/api/v1/") {
		panic(fmt.Sprintf("tollgate: operation %s %s is outside /api/v1: only paths under /api/v1/ are served (did you mean %q?)",
			op.Method, op.Path, "/api/v1/"+strings.TrimLeft(op.Path, "/")))
	}
}

// Huma is the /api/v1 API: operations registered on it before Routes are served behind the
// same guard, admitted by their security like tollgate's own, and described in the OpenAPI
// document /api-docs serves.
func (a *API) Huma() huma.API { return a.huma }

// Routes mounts the API. The order on /api/* is: CORS, the credential read, the throttles
// per IP and per token (one pass), JWT verification, handler. Throttles run before
// verification, so a flood never reaches the key set. (Request id and panic recovery wrap the whole server.)
func (a *API) Routes(mux *http.ServeMux) {
	a.inner.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errNoRoute)
	})
	guarded := a.guard(a.inner)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		// The operation's pattern, for the access log and metrics, before the guard: a
		// refused or throttled request counts against the route it asked for too.
		if _, pattern := a.inner.Handler(r); pattern != "/api/" {
			route.Record(r, pattern, "")
		}
		guarded.ServeHTTP(w, r)
	})

	if a.opts.SwaggerUI {
		docs := docsHandler(a.huma.OpenAPI())
		mux.Handle("GET /api-docs", docs)
		mux.Handle("GET /api-docs/", docs)
	}
}

// Security schemes: user tokens (the identity service's JWTs) and service keys (tgk_…) of
// trusted backends. Each operation names the one it admits.
const (
	schemeUser    = "bearer"
	schemeService = "serviceKey"
)

var (
	forUsers    = []map[string][]string{{schemeUser: {}}}
	forServices = []map[string][]string{{schemeService: {}}}
)

// register is the /api/v1 URL table: the user's own operations, purchases, and the
// service API of trusted backends.
func (a *API) register(api huma.API) {
	api.UseMiddleware(a.admitCredential)
	a.registerAccount(api)
	a.registerBilling(api)
	a.registerService(api)
	a.registerGrants(api)
}

// registerAccount is the token holder's own answer, usage and entitlement token.
func (a *API) registerAccount(api huma.API) {
	huma.Register(api, describedBy[meOutput](api, huma.Operation{
		OperationID: "get-me",
		Method:      http.MethodGet,
		Path:        "/api/v1/me",
		Summary:     "The current user and their billing position",
		Description: "The user is built from the verified token's claims; billing comes from the entitlement surface, " +
			"the same whichever store sold the plan.",
		Tags:     []string{"account"},
		Security: forUsers,
		Errors:   []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}), a.me)

	huma.Register(api, huma.Operation{
		OperationID: "record-usage",
		Method:      http.MethodPost,
		Path:        "/api/v1/usage/{name}",
		Summary:     "Record usage of a metered entitlement",
		Description: "Adds `amount` (default 1) to the caller's counter for this billing period, atomically, " +
			"and refuses with 403: type …/limit-exceeded when that would pass the plan's limit (nothing is recorded), " +
			"…/not-entitled when the plan does not include it at all. " +
			"This is the pattern for metered endpoints.",
		Tags:     []string{"usage"},
		Security: forUsers,
		Errors:   []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}, a.recordUsage)

	huma.Register(api, huma.Operation{
		OperationID: "create-entitlement-token",
		Method:      http.MethodPost,
		Path:        "/api/v1/entitlements/token",
		Summary:     "A signed entitlement token for the current user",
		Description: entitlementTokenDescription,
		Tags:        []string{"account"},
		Security:    forUsers,
		Errors:      []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}, a.entitlementToken)
}

// registerBilling is the token holder's purchases: started, read back, reported.
func (a *API) registerBilling(api huma.API) {
	huma.Register(api, huma.Operation{
		OperationID: "create-checkout",
		Method:      http.MethodPost,
		Path:        "/api/v1/billing/checkout",
		Summary:     "Start a web purchase of a plan",
		Description: "Creates a web provider Checkout Session in subscription mode for the plan's price (the given one, which " +
			"must be one of the plan's `web_prices`, else its first) and answers its `url`, to send the user to. The " +
			"subscription carries the user's id, so its webhooks entitle the user with no further step. 422 for an " +
			"unknown plan, a plan without web prices, a foreign price or a redirect URL off the allowed origins; 409 when " +
			"a subscription already entitles the user to the plan; 502 when the provider refuses.",
		Tags:     []string{"billing"},
		Security: forUsers,
		Errors: []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusConflict, http.StatusUnprocessableEntity,
			http.StatusTooManyRequests, http.StatusNotImplemented, http.StatusBadGateway, http.StatusServiceUnavailable},
	}, a.checkout)

	huma.Register(api, huma.Operation{
		OperationID: "create-portal",
		Method:      http.MethodPost,
		Path:        "/api/v1/billing/portal",
		Summary:     "Open the web provider's billing portal",
		Description: "Creates a customer portal session for the user's linked web customer, returning to PUBLIC_URL, and " +
			"answers its `url`. 404 when the user has no web customer yet.",
		Tags:     []string{"billing"},
		Security: forUsers,
		Errors: []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusTooManyRequests,
			http.StatusNotImplemented, http.StatusBadGateway, http.StatusServiceUnavailable},
	}, a.portal)

	huma.Register(api, describedBy[meOutput](api, huma.Operation{
		OperationID: "sync-billing",
		Method:      http.MethodPost,
		Path:        syncPath,
		Summary:     "Read the user's web purchase back now",
		Description: "Reads the Checkout Session (or, without one, every subscription of the user's web customer) and " +
			"its subscription from the web provider and applies it at once, in order with the webhooks (a newer one still " +
			"wins), then answers as /api/v1/me: for an app whose purchase UI has just closed, before the webhook may have " +
			"arrived. While the provider says the payment is still processing, the answer is not subscribed yet: call " +
			"again. 403 when the session is not the user's (its client_reference_id or its subscription's " +
			"metadata.user_id must name them); 429 past 10 calls a minute per user.",
		Tags:     []string{"billing"},
		Security: forUsers,
		Errors: []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests, http.StatusNotImplemented,
			http.StatusBadGateway, http.StatusServiceUnavailable},
	}), a.syncPurchase)

	huma.Register(api, describedBy[meOutput](api, huma.Operation{
		OperationID: "report-purchase",
		Method:      http.MethodPost,
		Path:        purchasesPath,
		Summary:     "Report a purchase made in the app",
		Description: "Verifies a purchase with its store (App Store: the signed transaction's chain and bundle; Google Play: " +
			"the purchase read from Google with its token and product), links it " +
			"to the token's user, applies it in order with the store's notifications, and answers as /api/v1/me. " +
			"409 when the purchase belongs to another user; 422 when it does not verify, its store is not configured, " +
			"or its product is on no plan; 429 past 10 reports a minute per user.",
		Tags:     []string{"billing"},
		Security: forUsers,
		Errors: []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusConflict, http.StatusUnprocessableEntity,
			http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}), a.purchase)
	enumerate(api, purchasesPath, "store", a.opts.PurchaseStores)
}

// registerService is the service API's reads and usage, for any user.
func (a *API) registerService(api huma.API) {
	huma.Register(api, describedBy[userEntitlementsOutput](api, huma.Operation{
		OperationID: "get-user-entitlements",
		Method:      http.MethodGet,
		Path:        "/api/v1/users/{user_id}/entitlements",
		Summary:     "A user's billing position, for trusted backends",
		Description: "The same billing object /api/v1/me gives, for any user id; a user tollgate has never seen " +
			"gets the default plan, not subscribed. Needs a service key (`tollgate keys create`).",
		Tags:     []string{"service"},
		Security: forServices,
		Errors:   []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}), a.userEntitlements)

	huma.Register(api, huma.Operation{
		OperationID: "record-user-usage",
		Method:      http.MethodPost,
		Path:        "/api/v1/users/{user_id}/usage/{name}",
		Summary:     "Record a user's usage, for trusted backends",
		Description: "The same as POST /api/v1/usage/{name}, for the user named in the path. Needs a service key.",
		Tags:        []string{"service"},
		Security:    forServices,
		Errors:      []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}, a.recordUserUsage)

	huma.Register(api, huma.Operation{
		OperationID: "create-user-entitlement-token",
		Method:      http.MethodPost,
		Path:        "/api/v1/users/{user_id}/entitlements/token",
		Summary:     "A signed entitlement token for any user, for trusted backends",
		Description: entitlementTokenDescription + " Needs a service key; a user's bearer token is 403.",
		Tags:        []string{"service"},
		Security:    forServices,
		Errors:      []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}, a.userEntitlementToken)
}

// registerGrants is the service API's grant routes.
func (a *API) registerGrants(api huma.API) {
	refusals := []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusConflict,
		http.StatusUnprocessableEntity, http.StatusTooManyRequests, http.StatusServiceUnavailable}
	huma.Register(api, huma.Operation{
		OperationID:   "create-user-grant",
		Method:        http.MethodPost,
		Path:          "/api/v1/users/{user_id}/grants",
		DefaultStatus: http.StatusCreated,
		Summary:       "Grant a user a plan until an end",
		Description: "Gives the user the plan from now until `until` (RFC 3339) or for `duration` (90m, 12h, 30d), for a " +
			"`reason`, as provider `grant`: every answer counts it like a subscription, the best plan winning, and it " +
			"ends by itself (an entitlements.changed webhook announces its start and its end). Recorded in the audit " +
			"log as the service key. 422 for a plan that does not exist, an end not in the future, neither or both of " +
			"until and duration, or no reason.",
		Tags:     []string{"service"},
		Security: forServices,
		Errors:   refusals,
	}, a.addGrant)

	huma.Register(api, huma.Operation{
		OperationID: "list-user-grants",
		Method:      http.MethodGet,
		Path:        "/api/v1/users/{user_id}/grants",
		Summary:     "A user's grants",
		Description: "Every grant of the user, newest first, ended or not.",
		Tags:        []string{"service"},
		Security:    forServices,
		Errors:      refusals,
	}, a.listGrants)

	huma.Register(api, huma.Operation{
		OperationID: "revoke-user-grant",
		Method:      http.MethodDelete,
		Path:        "/api/v1/users/{user_id}/grants/{grant_id}",
		Summary:     "Revoke a grant now",
		Description: "Ends the grant at once and answers it as ended. The reason is required, as `?reason=` or a JSON " +
			"`{\"reason\": …}` body (422 without one). 404 when the user has no such grant; 409 when it has already " +
			"ended or been revoked.",
		Tags:     []string{"service"},
		Security: forServices,
		Errors:   refusals,
	}, a.revokeGrant)
}

// guard puts the /api/* middleware in front of next.
func (a *API) guard(next http.Handler) http.Handler {
	// Per verified user, so behind Authenticate: the calls that read a provider's API.
	next = a.opts.Throttles.By(perUserSync, userPosting(syncPath), nil)(next)
	next = a.opts.Throttles.By(perUserPurchases, userPosting(purchasesPath), nil)(next)
	h := Authenticate(a.opts.Verifier, a.opts.Keys, a.opts.Log, a.opts.Users)(next)
	// Both throttles in one pass, which writes the RateLimit headers once.
	h = a.opts.Throttles.Guard(nil,
		ratelimit.Rule{Limit: a.opts.PerIP, Key: a.opts.Throttles.IPKey},
		ratelimit.Rule{Limit: a.opts.PerToken, Key: tokenKey})(h)
	h = readCredential(h)
	return a.opts.CORS.Handler(h)
}
