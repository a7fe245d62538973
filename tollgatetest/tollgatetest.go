// Package tollgatetest helps an app built on tollgate test its own routes without an
// identity service, a database server or anything of tollgate's internals: a fake of the
// identity service (the Supabase Auth API tollgate signs users in with) that mints tokens
// for any user, and a configuration for [tollgate.New] that needs nothing else. Serve
// [tollgate.App.Handler] with net/http/httptest and call your operations with the tokens.
package tollgatetest

import (
	"time"

	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
)

// The webhook secrets of Env: send test events with them (see SignWeb).
const (
	WebWebhookSecret    = "whsec_tollgatetest"
	MobileWebhookSecret = "mobile_tollgatetest"
)

// Identity is a fake identity service on a loopback port: the same API, tokens and key
// set as Supabase Auth, its users in memory. Close it when done.
type Identity struct {
	fake *identitytest.Fake
}

// NewIdentity starts a fake identity service.
func NewIdentity() (*Identity, error) {
	fake, err := identitytest.Start()
	if err != nil {
		return nil, err
	}
	return &Identity{fake: fake}, nil
}

// URL is the service's base URL, for AUTH_URL.
func (i *Identity) URL() string { return i.fake.URL }

// AddUser creates a confirmed user who signs in with password, and returns their id.
func (i *Identity) AddUser(email, password string) (userID string) {
	return i.fake.AddUser(email, password)
}

// Token returns the user id for email, creating a confirmed user if there is none, and an
// access token to send as "Authorization: Bearer <token>" to /api/v1. It is valid for an
// hour.
func (i *Identity) Token(email string) (userID, token string) { return i.fake.Token(email) }

// Close stops the service.
func (i *Identity) Close() { i.fake.Server.Close() }

// Env is a configuration for tollgate.New: pass its Get as getenv.
type Env map[string]string

// Get is the value of one setting, "" when unset.
func (e Env) Get(key string) string { return e[key] }

// NewEnv is a complete test configuration against identity: APP_ENV=test, an in-memory
// SQLite database (one per App), the webhook secrets above. Settings in overrides win,
// such as PLANS_FILE for your own plans; with APP_ENV=development among them, New also
// syncs the plans file into the database, as serve does in development.
func NewEnv(identity *Identity, overrides map[string]string) Env {
	e := Env{
		"APP_ENV": "test", "DATABASE_URL": "sqlite::memory:", "ADDR": "127.0.0.1:0",
		"AUTH_URL": identity.URL(), "WEB_WEBHOOK_SECRET": WebWebhookSecret, "MOBILE_WEBHOOK_SECRET": MobileWebhookSecret,
	}
	for k, v := range overrides {
		e[k] = v
	}
	return e
}

// SignWeb is the Web-Signature (or Stripe-Signature) header value a web provider would
// send with body, signed with WebWebhookSecret now. Mobile events carry
// MobileWebhookSecret as their Authorization header.
func SignWeb(body []byte) string {
	return stripe.SignHeader(WebWebhookSecret, time.Now(), body)
}
