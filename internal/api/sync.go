package api

import (
	"context"
	"net/http"
	"time"

	"github.com/tollgate/tollgate/internal/ratelimit"
)

// perUserSync bounds how often a user may have their purchase read back from the provider:
// each sync costs calls to the provider's API, which limits tollgate's key as a whole.
var perUserSync = ratelimit.Limit{Name: "api/billing-sync", Requests: 10, Window: time.Minute}

const syncPath = "/api/v1/billing/sync"

type syncInput struct {
	Body *struct {
		SessionID string `json:"session_id,omitempty" maxLength:"300" doc:"The Checkout Session the purchase UI just closed (its {CHECKOUT_SESSION_ID}); without it, every subscription of the user's web customer is read."`
	} `required:"false"`
}

// syncPurchase reads the user's web purchase back from the provider and applies it at
// once, then answers as /api/v1/me does: what an app calls when the purchase UI closes,
// before the webhook may have arrived.
func (a *API) syncPurchase(ctx context.Context, in *syncInput) (*encodedOutput, error) {
	user, _ := CurrentUser(ctx)
	session := ""
	if in.Body != nil {
		session = in.Body.SessionID
	}
	if _, err := a.opts.Checkout.Sync(ctx, user.ID, session); err != nil {
		return nil, a.fail(ctx, err)
	}
	return a.me(ctx, nil)
}

// userPosting keys a per-user throttle of the POST to path on the verified user; every
// other request passes it uncounted.
func userPosting(path string) func(r *http.Request) (string, bool) {
	return func(r *http.Request) (string, bool) {
		if r.Method != http.MethodPost || r.URL.Path != path {
			return "", false
		}
		user, ok := CurrentUser(r.Context())
		return user.ID, ok
	}
}
