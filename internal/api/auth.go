package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"tollgate/internal/problem"
)

type userKey struct{}

// CurrentUser is the verified user of an /api request. Handlers behind Authenticate can
// rely on ok being true.
func CurrentUser(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}

// Authenticate admits only requests with a valid bearer token; nothing else reaches next.
func Authenticate(v *Verifier, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, sent := bearerToken(r.Header.Get("Authorization"))
			if token == "" {
				unauthorized(w, sent, "A bearer token is required.")
				return
			}
			user, err := v.Verify(r.Context(), token)
			switch {
			case errors.Is(err, ErrNoKeySet):
				log.WarnContext(r.Context(), "token not judged: no key set loaded")
				problem.Unavailable(w, 5*time.Second, "Sign-in keys are not available yet; retry shortly.")
				return
			case err != nil:
				unauthorized(w, true, "The bearer token is invalid or expired.")
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
		})
	}
}

// bearerToken extracts the token of "Bearer <token>" (scheme in any case). sent reports
// whether the header carried a bearer credential at all, well-formed or not.
func bearerToken(header string) (token string, sent bool) {
	if strings.EqualFold(header, "bearer") {
		return "", true
	}
	scheme, rest, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(rest)
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", true
	}
	return token, true
}

// unauthorized answers 401 with the challenge of RFC 6750: error="invalid_token" only when
// a token was presented.
func unauthorized(w http.ResponseWriter, tokenSent bool, detail string) {
	challenge := `Bearer realm="api"`
	if tokenSent {
		challenge += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	problem.Write(w, http.StatusUnauthorized, "unauthorized", detail)
}
