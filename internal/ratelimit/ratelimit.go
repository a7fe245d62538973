// Package ratelimit counts requests per key in sliding windows for every throttle tollgate
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
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
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
