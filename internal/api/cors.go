package api

import (
	"net/http"
	"net/url"

	"github.com/rs/cors"
)

// CORS is the cross-origin policy of /api/*.
type CORS struct {
	// Origins are the exact origins allowed.
	Origins []string
	// AnyLocalhost also allows http(s)://localhost and 127.0.0.1 on any port: the
	// development default when no origins are configured.
	AnyLocalhost bool
}

// Handler wraps next. With no origin allowed it adds no CORS headers at all: rs/cors would
// read an empty list as "allow every origin", which must never happen in production.
func (c CORS) Handler(next http.Handler) http.Handler {
	if len(c.Origins) == 0 && !c.AnyLocalhost {
		return next
	}
	allowed := map[string]bool{}
	for _, o := range c.Origins {
		allowed[o] = true
	}
	return cors.New(cors.Options{
		AllowOriginFunc: func(origin string) bool {
			if allowed[origin] {
				return true
			}
			if !c.AnyLocalhost {
				return false
			}
			u, err := url.Parse(origin)
			return err == nil && (u.Scheme == "http" || u.Scheme == "https") && (u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1")
		},
		AllowedMethods:   []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
		AllowedHeaders:   []string{"Authorization", "Content-Type"},
		ExposedHeaders:   []string{"Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "X-Request-Id"},
		AllowCredentials: false,
		MaxAge:           600,
	}).Handler(next)
}
