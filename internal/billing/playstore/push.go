package playstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Refusals of a push, for the log: the answer to any of them is 401, and Pub/Sub retries.
var (
	errNoBearer   = errors.New("no bearer token")
	errPushClaims = errors.New("the push token is not Google's for this push subscription")
)

// pushClaims are the claims of a push's OIDC token.
type pushClaims struct {
	Email         string `json:"email"`
	EmailVerified bool   `json:"email_verified"`
	jwt.RegisteredClaims
}

// verifyPush checks the push's bearer token: signed by Google, issued by
// accounts.google.com to audience, for the service account email, not expired.
func (a *Adapter) verifyPush(h http.Header, now time.Time) error {
	header := h.Values("Authorization")
	if len(header) != 1 || !strings.HasPrefix(header[0], "Bearer ") {
		return errNoBearer
	}
	var claims pushClaims
	keyfunc := func(token *jwt.Token) (any, error) { return a.keys.KeyAt(context.Background(), token, now) }
	_, err := jwt.ParseWithClaims(strings.TrimPrefix(header[0], "Bearer "), &claims, keyfunc,
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithAudience(a.cfg.PushAudience), jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil {
		return fmt.Errorf("%w: %v", errPushClaims, err)
	}
	issuer := claims.Issuer
	if (issuer != "accounts.google.com" && issuer != "https://accounts.google.com") || claims.Email != a.cfg.PushServiceAccount || !claims.EmailVerified {
		return errPushClaims
	}
	return nil
}
