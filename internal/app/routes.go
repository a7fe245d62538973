package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/problem"
)

// Handler is the whole URL surface. Each domain mounts its own routes; the operational
// ones are here. The more specific patterns of the API and webhooks win over the forms' "/".
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()

	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /up", s.up)
	if s.cfg.MetricsAddr == "" && s.cfg.Env != config.Production {
		mux.Handle("GET /metrics", s.metricsHandler()) // else on METRICS_ADDR only, or nowhere
	}

	s.billing.webhooks.Routes(mux, s.cfg.BillingMount)
	s.held.routes(mux) // the key set, and the identity service's access token hook
	if s.devIdentity != nil {
		mux.Handle(config.DevIdentityPath+"/", s.devIdentity.Handler())
	}
	for _, standIn := range s.standIns {
		mux.Handle(standIn.Path+"/", loopbackOnly(http.StripPrefix(standIn.Path, standIn.Handler)))
	}
	if s.cfg.API {
		s.api.Routes(mux)
	}
	if s.console != nil {
		console := s.web.Wrap(s.console.Handler()) // behind the forms' session and protections
		mux.Handle("/admin", console)
		mux.Handle("/admin/", console)
	}
	if s.cfg.Forms {
		forms := s.web.Handler()
		mux.Handle("/", forms) // the forms, and the HTML 404 for everything else
		// The buyer's return from checkout is a page of the forms' under the billing mount,
		// whose other paths are the webhooks' JSON.
		mux.Handle("GET /"+s.cfg.BillingMount+"/return", forms)
	} else {
		mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
			problem.Write(w, http.StatusNotFound, "not-found", "Nothing is served here.")
		})
	}
	return s.withRequestID(s.withAccessLog(s.withRecover(mux)))
}

// loopbackOnly serves h to clients on this machine only: a development stand-in must not
// answer anyone else, even behind a port that was opened wider than ADDR says.
func loopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			problem.Write(w, http.StatusNotFound, "not-found", "Nothing is served here.")
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry})
}

// healthz says the process is alive; it touches no dependency.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"status":"ok"}`+"\n")
}

// readyz says whether requests can be served: the database must answer and, when the API
// is configured, its key set must have loaded.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.db.PingContext(ctx); err != nil {
		s.env.log.WarnContext(r.Context(), "not ready: database unreachable", "error", err)
		problem.Unavailable(w, 5*time.Second, "The database is not reachable.")
		return
	}
	if s.cfg.AuthJWKSURL != "" && !s.keys.Loaded() {
		problem.Unavailable(w, 5*time.Second, "The identity service's key set has not loaded yet.")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"status":"ready"}`+"\n")
}

// up is the health route web frameworks serve by default (Rails' /up), for platforms that probe it.
func (s *Server) up(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, `<!DOCTYPE html><html><body style="background-color: green"></body></html>`+"\n")
}
