package web

import (
	"net/http"
	"strings"

	"github.com/tollgate/tollgate/internal/route"
)

// recordRoute tells the server's access log the forms route a request matched (see
// package route), with a path safe to log: no query string, and the pattern itself where
// a path segment would carry a token.
func recordRoute(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r) // sets r.Pattern
		path := r.URL.Path
		if strings.Contains(r.Pattern, "{token}") {
			_, path, _ = strings.Cut(r.Pattern, " ")
		}
		route.Record(r, r.Pattern, path)
	})
}
