package billing

import (
	"net/http"

	"github.com/tollgate/tollgate/internal/problem"
)

// Routes mounts the billing endpoints under /{mount}. The web webhook exists only in
// webhook ingestion mode; in sync_engine mode its path answers 404 like any unknown path
// under the mount, as a problem document and always 404 (never the forms' page or throttle).
func (s *Service) Routes(mux *http.ServeMux, mount string) {
	if s.mountWeb {
		mux.HandleFunc("POST /"+mount+"/webhooks/web", s.webWebhook)
	}
	mux.HandleFunc("POST /"+mount+"/webhooks/mobile", s.mobileWebhook)
	mux.HandleFunc("/"+mount+"/", func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, http.StatusNotFound, "not-found", "There is no such billing endpoint.")
	})
}
