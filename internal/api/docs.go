package api

import (
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/swaggest/swgui"
	"github.com/swaggest/swgui/v5emb"
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
