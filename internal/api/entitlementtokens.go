package api

import (
	"context"
	"errors"

	"github.com/tollgate/tollgate/internal/heldanswers"
)

type entitlementTokenOutput struct {
	Body heldanswers.Token
}

const entitlementTokenDescription = "A short-lived signed entitlement token: a compact JWS (ES256, with `kid`, `typ` JWT) " +
	"that any backend verifies with tollgate's public keys at /.well-known/jwks.json, with no call to tollgate and no " +
	"shared secret. Its claims: `iss` (PUBLIC_URL), `sub` (the user id), `aud` (ENTITLEMENT_TOKEN_AUDIENCE), `iat`, " +
	"`exp`, `jti` and `billing` — the billing object /api/v1/me gives now, without `usage`. `exp` is at most " +
	"ENTITLEMENT_TOKEN_TTL after `iat`, and never later than the first moment the answer may change by itself (a " +
	"period's, a trial's or a grant's end). The same token may be answered again while the answer and the signing key " +
	"are unchanged and most of its life is left. It is not an API bearer token."

// entitlementToken is POST /api/v1/entitlements/token: the token holder's.
func (a *API) entitlementToken(ctx context.Context, _ *struct{}) (*entitlementTokenOutput, error) {
	user, _ := CurrentUser(ctx)
	return a.mintEntitlementToken(ctx, user.ID)
}

// userEntitlementToken is POST …/users/{user_id}/entitlements/token: any user's, for a
// service key.
func (a *API) userEntitlementToken(ctx context.Context, in *userPath) (*entitlementTokenOutput, error) {
	return a.mintEntitlementToken(ctx, in.UserID)
}

func (a *API) mintEntitlementToken(ctx context.Context, userID string) (*entitlementTokenOutput, error) {
	if a.opts.HeldAnswers == nil {
		return nil, a.fail(ctx, errors.New("no entitlement token issuer is wired into this API"))
	}
	t, err := a.opts.HeldAnswers.Token(ctx, userID)
	if err != nil {
		return nil, a.fail(ctx, err)
	}
	return &entitlementTokenOutput{Body: t}, nil
}
