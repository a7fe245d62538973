package api

import (
	"net/http"

	"github.com/swaggest/swgui"
	"github.com/swaggest/swgui/v5emb"

	"github.com/tollgate/tollgate/swagger"
)

// docsHandler serves Swagger UI from assets embedded in the binary (no CDN) over the
// committed swagger/v1/swagger.yaml.
func docsHandler() http.Handler {
	ui := v5emb.NewWithConfig(swgui.Config{
		Title:       "tollgate API",
		SwaggerJSON: "/api-docs/swagger.yaml",
		BasePath:    "/api-docs/",
		HideCurl:    false,
	})("", "", "")
	mux := http.NewServeMux()
	mux.Handle("GET /api-docs/swagger.yaml", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Write(swagger.V1)
	}))
	mux.Handle("GET /api-docs", ui)
	mux.Handle("GET /api-docs/", ui)
	return mux
}
