package console

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/tollgate/tollgate/internal/route"
)

// Handler is the console's whole URL table, every route behind the operator gate. It is
// served behind the forms' session, security headers (no-store, framed by nobody) and
// cross-origin protection on every POST.
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin", c.overview)
	mux.HandleFunc("GET /admin/{$}", c.overview)
	mux.HandleFunc("GET /admin/customers", c.customers)
	mux.HandleFunc("GET /admin/customers/{user_id}", c.customer)
	mux.HandleFunc("POST /admin/customers/{user_id}/grants", c.addGrant)
	mux.HandleFunc("POST /admin/customers/{user_id}/grants/{grant_id}/revoke", c.revokeGrant)
	mux.HandleFunc("GET /admin/events", c.events)
	mux.HandleFunc("GET /admin/events/{id}", c.event)
	mux.HandleFunc("POST /admin/events/{id}/replay", c.replay)
	mux.HandleFunc("GET /admin/deliveries", c.deliveries)
	mux.HandleFunc("POST /admin/deliveries/{id}/retry", c.retry)
	mux.HandleFunc("GET /admin/plans", c.plans)
	mux.HandleFunc("GET /admin/audit", c.auditLog)
	mux.Handle("GET /admin/static/", http.StripPrefix("/admin/", http.FileServerFS(staticFS)))
	mux.HandleFunc("/admin/", c.opts.NotFound)
	return c.operatorsOnly(c.readableQuery(recordRoute(mux)))
}

// readableQuery refuses (400) a query string whose names or values hold a NUL byte or
// invalid UTF-8: no console page means one, and a database cannot compare it (Postgres
// refuses it as text), which would otherwise fail the page as our error.
func (c *Console) readableQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for name, values := range r.URL.Query() {
			for _, s := range append(values, name) {
				if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
					c.fail(w, r, errBadInput)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// recordRoute tells the access log the console route a request matched.
func recordRoute(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r)
		route.Record(r, r.Pattern, r.URL.Path)
	})
}
