// Package route carries the route pattern a request matched back to the server's access log
// and metrics. The forms and the API route inside muxes of their own, often on a copy of
// the request made by their middleware, so the server's middleware cannot read the
// pattern off its own request: it puts a Route in the context, and the surface fills it in.
package route

import (
	"context"
	"net/http"
)

// Route is the pattern a request matched ("GET /api/v1/me") and, where a surface gives
// one, a path safe to log (without the query string or tokens); "" when none matched.
type Route struct {
	Pattern string
	Path    string
}

type key struct{}

// With returns a context in which the surfaces record the route they match into the
// returned Route.
func With(ctx context.Context) (context.Context, *Route) {
	r := &Route{}
	return context.WithValue(ctx, key{}, r), r
}

// Record sets the route of the request whose context came from With; elsewhere it does
// nothing.
func Record(r *http.Request, pattern, path string) {
	if route, ok := r.Context().Value(key{}).(*Route); ok {
		route.Pattern, route.Path = pattern, path
	}
}
