package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/tollgate/tollgate/internal/identity"
)

type operatorKey struct{}

func operatorOf(ctx context.Context) *identity.User {
	u, _ := ctx.Value(operatorKey{}).(*identity.User)
	return u
}

// operatorsOnly lets operators through. Nobody signed in is sent to sign in, and back
// after; anyone else gets the site's 404, for every route and method alike, so the
// console's existence is not advertised.
func (c *Console) operatorsOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := c.opts.CurrentUser(r.Context())
		var rejected *identity.Error
		switch {
		case errors.As(err, &rejected) && !errors.Is(err, identity.ErrUnavailable):
			u = nil // a session the identity service no longer honours: sign in again
		case err != nil:
			c.opts.Log.WarnContext(r.Context(), "console: operator not checked", "error", err)
			c.render(w, r, http.StatusServiceUnavailable, "message", page{Title: "Unavailable",
				Alert: "The identity service is not answering, so who you are cannot be checked. Please try again in a moment."})
			return
		}
		switch {
		case u == nil && r.Method == http.MethodGet:
			http.Redirect(w, r, "/session/new?redirect_to="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		case !c.isOperator(u):
			c.opts.NotFound(w, r)
		default:
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), operatorKey{}, u)))
		}
	})
}
