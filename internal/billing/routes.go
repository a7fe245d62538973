package billing

import "net/http"

// Routes mounts the billing endpoints under /{mount}. The web webhook exists only in
// webhook ingestion mode; in sync_engine mode its path answers 404 like any unknown path.
func (s *Service) Routes(mux *http.ServeMux, mount string) {
	if s.mountWeb {
		mux.HandleFunc("POST /"+mount+"/webhooks/web", s.webWebhook)
	}
	mux.HandleFunc("POST /"+mount+"/webhooks/mobile", s.mobileWebhook)
}
