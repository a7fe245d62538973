// Package api is API mode (SPEC 1.2): /api/v1, guarded by identity-service JWTs verified
// against its JWKS on every request, behind per-IP and per-token throttles, with CORS, an
// OpenAPI description and embedded API docs.
package api

import (
	"log/slog"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"tollgate/internal/billing"
	"tollgate/internal/ratelimit"
)

// Options wires the API to its collaborators.
type Options struct {
	Billing   *billing.Service
	Verifier  *Verifier
	Throttles *ratelimit.Throttles
	// PerIP and PerToken default to SPEC 8's limits.
	PerIP, PerToken ratelimit.Limit
	CORS            CORS
	SwaggerUI       bool
	Log             *slog.Logger
}

// API serves /api/* and /api-docs.
type API struct {
	opts Options
}

// New builds the API.
func New(opts Options) *API {
	if opts.PerIP.Requests == 0 {
		opts.PerIP = ratelimit.PerIP
	}
	if opts.PerToken.Requests == 0 {
		opts.PerToken = ratelimit.PerToken
	}
	return &API{opts: opts}
}

// Routes mounts the API. The order on /api/* is DESIGN §3's: CORS, throttle per IP,
// throttle per token, JWT verification, handler. Throttles run before verification, so a
// flood never reaches the key set. (Request id and panic recovery wrap the whole server.)
func (a *API) Routes(mux *http.ServeMux) {
	inner := http.NewServeMux()
	a.register(humago.New(inner, Config()))
	inner.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errNoRoute)
	})
	mux.Handle("/api/", a.guard(inner))

	if a.opts.SwaggerUI {
		docs := docsHandler()
		mux.Handle("GET /api-docs", docs)
		mux.Handle("GET /api-docs/", docs)
	}
}

// guard puts the /api/* middleware in front of next.
func (a *API) guard(next http.Handler) http.Handler {
	h := Authenticate(a.opts.Verifier, a.opts.Log)(next)
	h = a.opts.Throttles.By(a.opts.PerToken, tokenKey, nil)(h)
	h = readCredential(h)
	h = a.opts.Throttles.ByIP(a.opts.PerIP)(h)
	return a.opts.CORS.Handler(h)
}

// Config is the huma configuration of /api/v1: its own docs page and schema links are off
// (the embedded Swagger UI reads the committed swagger.yaml instead), and the bearer scheme
// is declared for every operation.
func Config() huma.Config {
	cfg := huma.DefaultConfig("tollgate API", "1.0.0")
	cfg.Info.Description = "Endpoints for clients that hold an identity-service access token. " +
		"Every request needs `Authorization: Bearer <jwt>`; errors are RFC 9457 problem documents."
	cfg.OpenAPIPath, cfg.DocsPath, cfg.SchemasPath = "", "", ""
	cfg.CreateHooks = nil
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearer": {Type: "http", Scheme: "bearer", BearerFormat: "JWT"},
	}
	cfg.Security = []map[string][]string{{"bearer": {}}}
	cfg.Servers = []*huma.Server{{URL: "/"}}
	return cfg
}
