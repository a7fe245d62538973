package web

import (
	"net/http"
	"strings"

	"github.com/tollgate/tollgate/internal/route"
)

// recordRoute tells the server's access log the forms route a request matches (see
// package route), with a path safe to log: no query string, and the pattern itself where
// a path segment would carry a token. It is told before next runs, so that a request the
// throttles refuse is logged with its route and path too.
func recordRoute(mux *http.ServeMux, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pattern := mux.Handler(r)
		path := r.URL.Path
		if strings.Contains(pattern, "{token}") {
			_, path, _ = strings.Cut(pattern, " ")
		}
		route.Record(r, pattern, path)
		next.ServeHTTP(w, r)
	})
}
