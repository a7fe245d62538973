package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate/tollgate/internal/problem"
	"github.com/tollgate/tollgate/internal/route"
)

type requestIDKey struct{}

// withRequestID gives every request an id, taken from a sane X-Request-Id or made here, and
// echoes it so a caller can quote it.
func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !saneRequestID(id) {
			var b [12]byte
			rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// requestIDHandler adds the request id from the context to every log record.
type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, rec slog.Record) error {
	if id, ok := ctx.Value(requestIDKey{}).(string); ok {
		rec.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, rec)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}

// withRecover turns a panic into a 500 problem without details; the stack goes to the log.
func (s *Server) withRecover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.env.log.ErrorContext(r.Context(), "panic serving request", "panic", v, "stack", string(debug.Stack()))
				problem.Write(w, http.StatusInternalServerError, "internal", "Something went wrong on our side.")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_http_requests_total", Help: "HTTP requests by route pattern and status.",
		}, []string{"route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tollgate_http_request_duration_seconds", Help: "HTTP request latency by route pattern.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// withAccessLog logs and counts every request by its route pattern (never the raw path,
// which may carry tokens, and which would make metrics unbounded). Form pages also log
// their path without the query string.
func (s *Server) withAccessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		ctx, matched := route.With(r.Context())
		r = r.WithContext(ctx)
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		// The forms and the API route again in muxes of their own and tell the route they
		// matched, one of a fixed set of patterns, so the label set stays bounded.
		pattern := r.Pattern
		attrs := []any{"method", r.Method}
		switch {
		case matched.Pattern != "":
			pattern = matched.Pattern
			if matched.Path != "" {
				attrs = append(attrs, "path", matched.Path)
			}
		case pattern == "":
			pattern = "unmatched"
		}
		elapsed := time.Since(start)
		s.metrics.requests.WithLabelValues(pattern, strconv.Itoa(rec.status)).Inc()
		s.metrics.duration.WithLabelValues(pattern).Observe(elapsed.Seconds())
		s.env.log.InfoContext(r.Context(), "request", append(attrs, "route", pattern, "status", rec.status, "duration", elapsed)...)
	})
}
