package api

import (
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/swaggest/swgui"
	"github.com/swaggest/swgui/v5emb"

	"github.com/tollgate/tollgate/internal/problem"
)

// docsHandler serves Swagger UI from assets embedded in the binary (no CDN) over spec, the
// API's description as it runs: tollgate's own operations (which the committed
// swagger/v1/swagger.yaml holds) and any a program built on tollgate added.
func docsHandler(spec *huma.OpenAPI) http.Handler {
	ui := v5emb.NewWithConfig(swgui.Config{
		Title:       "tollgate API",
		SwaggerJSON: "/api-docs/swagger.yaml",
		BasePath:    "/api-docs/",
		HideCurl:    false,
	})("", "", "")
	mux := http.NewServeMux()
	mux.Handle("GET /api-docs/swagger.yaml", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		yaml, err := spec.YAML()
		if err != nil {
			http.Error(w, "The API description could not be written.", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/yaml")
		w.Write(yaml)
	}))
	mux.Handle("GET /api-docs", ui)
	mux.Handle("GET /api-docs/", ui)
	return mux
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
		schemeUser: {Type: "http", Scheme: "bearer", BearerFormat: "JWT",
			Description: "An access token of the identity service, for the user it names."},
		schemeService: {Type: "http", Scheme: "bearer", BearerFormat: "tgk_…",
			Description: "A service key made with `tollgate keys create`, for trusted backends acting on any user."},
	}
	cfg.Security = forUsers
	cfg.Servers = []*huma.Server{{URL: "/"}}
	cfg.Transformers = append(cfg.Transformers, typeProblems)
	return cfg
}

// typeProblems gives huma's own problems (request validation's 422, a body too large, …) a
// type under problem.TypeBase, as every problem of tollgate's has, so that clients can
// switch on the type alone.
func typeProblems(_ huma.Context, _ string, v any) (any, error) {
	if e, ok := v.(*huma.ErrorModel); ok && (e.Type == "" || e.Type == "about:blank") {
		kind := "invalid-request"
		if e.Status != http.StatusUnprocessableEntity {
			kind = strings.ToLower(strings.ReplaceAll(http.StatusText(e.Status), " ", "-"))
		}
		e.Type = problem.TypeBase + kind
	}
	return v, nil
}
