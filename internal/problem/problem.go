// Package problem writes RFC 9457 application/problem+json responses. Titles and details
// are public text: callers pass safe messages and keep error detail for the log.
package problem

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// TypeBase prefixes every problem type URI.
const TypeBase = "https://tollgate.dev/problems/"

// Problem is the response body.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// Write sends p. kind is the last segment of the type URI ("about:blank" when empty).
func Write(w http.ResponseWriter, status int, kind, detail string) {
	p := Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail}
	if kind != "" {
		p.Type = TypeBase + kind
	}
	Send(w, p, nil)
}

// Send writes p with its headers (Retry-After, WWW-Authenticate): every problem document
// outside huma's own answers is written here.
func Send(w http.ResponseWriter, p Problem, headers http.Header) {
	for k, v := range headers {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	json.NewEncoder(w).Encode(p)
}

// Unavailable sends 503 with Retry-After, for failures the client should simply retry.
func Unavailable(w http.ResponseWriter, retryAfter time.Duration, detail string) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(retryAfter/time.Second))))
	Write(w, http.StatusServiceUnavailable, "unavailable", detail)
}
