// Package tollgate runs tollgate — sign-in forms, a token-guarded /api/v1 and subscription
// billing from four stores (Stripe, Adapty, the App Store and Google Play), with outbound
// webhooks, an operator console and reconciliation — as a command, or as a Go framework you
// extend with your own API.
//
// As a command, a program's main calls [Main], exactly as cmd/tollgate does.
//
// As a framework, [New] prepares the server from the configuration (the same environment
// variables as the command), [App.API] takes your own huma operations under /api/v1 (behind
// the same CORS, throttles and token verification, and in the OpenAPI document /api-docs
// serves), handlers read the signed-in user with [CurrentUser] and their plan with
// [App.Entitlements], [App.OnBillingChange] tells you when a user's billing changed, and
// [App.Run] serves until the context ends.
package tollgate

import (
	"context"
	"io"
	"net/http"
	"os"

	"github.com/danielgtaylor/huma/v2"

	"github.com/tollgate/tollgate/internal/api"
	"github.com/tollgate/tollgate/internal/app"
	"github.com/tollgate/tollgate/internal/billing"
)

// Main runs the tollgate command line with args (without the program's name) and returns
// the process's exit code.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return app.Run(ctx, args, getenv, stdout, stderr)
}

// App is a tollgate server with your additions.
type App struct {
	server *app.Server
}

// New reads the configuration through getenv (nil: the process environment; in
// development .env.development is read under it, as by the command), opens the database and,
// unless AUTO_MIGRATE=false, migrates it. Logs go to logs (nil: standard error).
func New(ctx context.Context, getenv func(string) string, logs io.Writer) (*App, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if logs == nil {
		logs = os.Stderr
	}
	server, err := app.Open(ctx, getenv, logs)
	if err != nil {
		return nil, err
	}
	return &App{server: server}, nil
}

// API is the /api/v1 API. Operations registered on it run behind tollgate's CORS, per-IP
// and per-token throttles and token verification, for signed-in users (unless their
// Security names "serviceKey", for trusted backends), and appear in the OpenAPI document.
func (a *App) API() huma.API { return a.server.API() }

// OnBillingChange registers fn, called with a user's id after a webhook, a replay or a
// backfill changed that user's billing answer (subscribed or not, plan, status, period end,
// entitlements: what /api/v1/me says), once the change is committed; an event that changes
// no answer calls nothing. The outbound webhooks (OUTBOUND_WEBHOOK_URL) come from the same
// detection. It runs before the provider is answered: keep it quick, or hand the work off.
func (a *App) OnBillingChange(fn func(ctx context.Context, userID string)) {
	a.server.OnBillingChange(fn)
}

// Entitlements is a user's position now: [Entitlements.Subscribed], [Entitlements.Plan],
// [Entitlements.Entitled] and [Entitlements.Limit]. Answers are kept in memory for at most
// BILLING_ANSWER_MAX_AGE and dropped as soon as anything they are made of changes.
func (a *App) Entitlements(ctx context.Context, userID string) (Entitlements, error) {
	e, err := a.server.Billing().Entitlements(ctx, userID)
	if err != nil {
		return Entitlements{}, err
	}
	return entitlementsOf(e), nil
}

// RecordUsage adds amount to the user's counter of the metered entitlement name in this
// billing period, atomically; past the plan's limit it changes nothing and returns
// ErrLimitExceeded, without such an entitlement ErrNotEntitled.
func (a *App) RecordUsage(ctx context.Context, userID, name string, amount int64) (Usage, error) {
	u, err := a.server.Billing().RecordUsage(ctx, userID, name, amount)
	return Usage(u), err
}

// Handler is the whole HTTP surface, the one Run serves, for tests of an app's own
// operations with net/http/httptest (see package tollgatetest) without a listener. Close
// the App when done with it.
func (a *App) Handler() http.Handler { return a.server.Handler() }

// Close releases the database and Redis of an App that will not Run, such as one whose
// Handler a test served; Run releases them itself.
func (a *App) Close() error { return a.server.Close() }

// Run serves on ADDR until ctx ends, then stops gracefully (SHUTDOWN_TIMEOUT) and releases
// the database. An App runs once.
func (a *App) Run(ctx context.Context) error { return a.server.ListenAndServe(ctx) }

// User is the verified user of an /api/v1 request, built from the token's claims.
type User = api.User

// CurrentUser is the signed-in user of an /api/v1 request; ok is false for a request made
// with a service key.
func CurrentUser(ctx context.Context) (user User, ok bool) { return api.CurrentUser(ctx) }

// Refusals of RecordUsage, and for your own operations (see Problem).
var (
	ErrNotEntitled   error = billing.ErrNotEntitled
	ErrLimitExceeded error = billing.ErrLimitExceeded
)

// Problem is the answer an operation returns for err, as tollgate's own do: a 403 problem
// for ErrNotEntitled and ErrLimitExceeded, 503 with Retry-After for anything else (the
// database, say), never the error's text.
func Problem(err error) error {
	if err == nil {
		return nil
	}
	return api.Problem(err)
}
