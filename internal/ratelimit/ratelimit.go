// Package ratelimit counts requests per key in fixed windows for every throttle tollgate
// has: the API's per client IP and per bearer token, the forms' per IP and per e-mail.
// Counters live in memory or, with Redis, are shared by every instance. When Redis fails the counters fall
// back to local memory (fail open) and recover when Redis returns.
package ratelimit

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/httprate"
	httprateredis "github.com/go-chi/httprate-redis"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/tollgate/tollgate/internal/problem"
)

// Limit is one throttle: at most Requests per Window for each key.
type Limit struct {
	Name     string
	Requests int
	Window   time.Duration
}

// The default limits: generous for people and well-behaved clients, tight for floods.
var (
	PerIP    = Limit{Name: "api/ip", Requests: 300, Window: 5 * time.Minute}
	PerToken = Limit{Name: "api/token", Requests: 1000, Window: time.Minute}
)

// Options configures Throttles.
type Options struct {
	// RedisURL, when set, shares counters between instances through Redis.
	RedisURL string
	// KeyPrefix namespaces the Redis keys (tests use one per run).
	KeyPrefix      string
	TrustedProxies []netip.Prefix
	Log            *slog.Logger
	Registerer     prometheus.Registerer
}

// Throttles builds throttling middleware.
type Throttles struct {
	opts  Options
	redis *redis.Client
	// redisDown is shared by every throttle so that one outage is reported once.
	redisDown atomic.Bool
	hits      *prometheus.CounterVec
	fallback  *prometheus.CounterVec
}

// New prepares throttles; with a Redis URL it opens (lazily) one client for all of them.
func New(opts Options) (*Throttles, error) {
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = "tollgate:throttle"
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	t := &Throttles{
		opts: opts,
		hits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_throttle_hits_total", Help: "Requests refused by a throttle.",
		}, []string{"limit"}),
		fallback: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_throttle_redis_fallback_total", Help: "Switches of throttle counters to local memory because Redis failed.",
		}, []string{"limit"}),
	}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(t.hits, t.fallback)
	}
	if opts.RedisURL != "" {
		ro, err := redis.ParseURL(opts.RedisURL)
		if err != nil {
			return nil, errors.New("REDIS_URL: cannot parse it")
		}
		// Short timeouts and no retries let the local fallback take over quickly.
		ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout, ro.MaxRetries = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond, -1
		t.redis = redis.NewClient(ro)
	}
	return t, nil
}

// Close releases the Redis client.
func (t *Throttles) Close() error {
	if t.redis != nil {
		return t.redis.Close()
	}
	return nil
}

// IPKey keys a throttle on the client IP.
func (t *Throttles) IPKey(r *http.Request) (string, bool) {
	return httprate.CanonicalizeIP(ClientIP(r, t.opts.TrustedProxies).String()), true
}

// ByIP limits requests per client IP, refusing with a 429 problem.
func (t *Throttles) ByIP(limit Limit) func(http.Handler) http.Handler {
	return t.By(limit, t.IPKey, nil)
}

// By limits requests per key; requests for which key reports false pass uncounted. A
// refused request gets onLimit, or a 429 problem when onLimit is nil; Retry-After and the
// RateLimit headers are set either way.
func (t *Throttles) By(limit Limit, key func(*http.Request) (string, bool), onLimit http.HandlerFunc) func(http.Handler) http.Handler {
	return t.middleware(limit, key, onLimit)
}

func (t *Throttles) middleware(limit Limit, key func(*http.Request) (string, bool), onLimit http.HandlerFunc) func(http.Handler) http.Handler {
	if onLimit == nil {
		onLimit = func(w http.ResponseWriter, r *http.Request) {
			problem.Write(w, http.StatusTooManyRequests, "rate-limited", "Too many requests; retry after the time in Retry-After.")
		}
	}
	opts := []httprate.Option{
		httprate.WithResponseHeaders(httprate.ResponseHeaders{
			// RateLimit-* in Go's canonical spelling, which is what goes on the wire anyway;
			// the exact spelling saves a canonicalisation per header per request.
			// Retry-After is set by the limit handler, in seconds until the window resets.
			Limit: "Ratelimit-Limit", Remaining: "Ratelimit-Remaining", Reset: "Ratelimit-Reset", RetryAfter: "",
		}),
		httprate.WithLimitHandler(func(w http.ResponseWriter, r *http.Request) {
			t.hits.WithLabelValues(limit.Name).Inc()
			w.Header().Set("Retry-After", strconv.FormatInt(max(1, secondsToReset(w.Header())), 10))
			onLimit(w, r)
		}),
		httprate.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
			t.opts.Log.ErrorContext(r.Context(), "throttle failed", "limit", limit.Name, "error", err)
			problem.Unavailable(w, time.Second, "Please retry.")
		}),
	}
	if t.redis != nil {
		opts = append(opts, httprateredis.WithRedisLimitCounter(&httprateredis.Config{
			Client: t.redis, PrefixKey: t.opts.KeyPrefix + ":" + limit.Name, WindowLength: limit.Window,
			FallbackTimeout: 200 * time.Millisecond,
			OnFallbackChange: func(activated bool) {
				if activated {
					t.fallback.WithLabelValues(limit.Name).Inc()
					if t.redisDown.CompareAndSwap(false, true) {
						t.opts.Log.Warn("Redis unreachable: throttles count locally until it returns")
					}
				} else if t.redisDown.CompareAndSwap(true, false) {
					t.opts.Log.Info("Redis reachable again: throttle counts are shared")
				}
			},
		}))
	}
	limiter := httprate.NewRateLimiter(limit.Requests, limit.Window, opts...)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			k, ok := key(r)
			if ok && limiter.RespondOnLimit(w, r, limit.Name+":"+k) {
				return
			}
			if ok {
				secondsToReset(w.Header())
			}
			next.ServeHTTP(w, r)
		})
	}
}

// secondsToReset rewrites httprate's RateLimit-Reset, an absolute Unix time, into what the
// IETF RateLimit header fields draft asks for: the seconds until the window resets. It
// returns that number.
func secondsToReset(h http.Header) int64 {
	at, err := strconv.ParseInt(h.Get("Ratelimit-Reset"), 10, 64)
	if err != nil {
		return 0
	}
	seconds := max(0, at-time.Now().Unix())
	h.Set("Ratelimit-Reset", strconv.FormatInt(seconds, 10))
	return seconds
}

// ClientIP is the request's client address: the socket peer, unless that peer is a trusted
// proxy, in which case the right-most X-Forwarded-For entry not itself trusted.
func ClientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := parseAddr(r.RemoteAddr)
	if !isTrusted(peer, trusted) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		addr := parseAddr(strings.TrimSpace(hops[i]))
		if !addr.IsValid() {
			break
		}
		if !isTrusted(addr, trusted) {
			return addr
		}
		peer = addr
	}
	return peer
}

func isTrusted(addr netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

func parseAddr(s string) netip.Addr {
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return addr.Unmap()
}
