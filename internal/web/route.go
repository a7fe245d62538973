package web

import (
	"context"
	"net/http"
	"strings"
)

// Route is the forms route a request matched, for the server's access log: the pattern
// ("GET /passwords/{token}/edit") and a path safe to log (no query string, and the pattern
// itself where a path segment would carry a token).
type Route struct {
	Pattern string
	Path    string
}

type routeKey struct{}

// WithRoute returns a context in which the forms record the route they match into the
// returned Route. The forms route inside their own mux, on a request copied by the session
// middleware, so the server's middleware cannot read the pattern off its own request.
func WithRoute(ctx context.Context) (context.Context, *Route) {
	route := &Route{}
	return context.WithValue(ctx, routeKey{}, route), route
}

func recordRoute(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r) // sets r.Pattern
		route, ok := r.Context().Value(routeKey{}).(*Route)
		if !ok {
			return
		}
		route.Pattern = r.Pattern
		route.Path = r.URL.Path
		if strings.Contains(r.Pattern, "{token}") {
			_, route.Path, _ = strings.Cut(r.Pattern, " ")
		}
	})
}
