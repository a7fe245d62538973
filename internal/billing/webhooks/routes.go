package webhooks

import (
	"net/http"

	"github.com/tollgate/tollgate/internal/problem"
)

// Routes mounts one webhook route per adapter under /{mount}: POST
// /{mount}/webhooks/{provider}. A provider left out of the list (the web provider in
// sync_engine mode) has no route: its path answers 404 like any unknown path under the
// mount, as a problem document and always 404 (never the forms' page or throttle).
func (h *Webhooks) Routes(mux *http.ServeMux, mount string) {
	for _, a := range h.adapters {
		mux.HandleFunc("POST /"+mount+"/webhooks/"+a.Provider(), func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, a) })
	}
	mux.HandleFunc("/"+mount+"/", func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, http.StatusNotFound, "not-found", "There is no such billing endpoint.")
	})
}
