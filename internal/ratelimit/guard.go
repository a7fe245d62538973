package ratelimit

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/httprate"
	httprateredis "github.com/go-chi/httprate-redis"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate/tollgate/internal/problem"
)

// Rule is one throttle of a guard: a limit and what it counts by. Key reporting false
// leaves the request uncounted by this rule.
type Rule struct {
	Limit Limit
	Key   func(*http.Request) (string, bool)
}

// IPKey keys a throttle on the client IP.
func (t *Throttles) IPKey(r *http.Request) (string, bool) {
	return httprate.CanonicalizeIP(ClientIP(r, t.opts.TrustedProxies).String()), true
}

// ByIP limits requests per client IP, refusing with a 429 problem.
func (t *Throttles) ByIP(limit Limit) func(http.Handler) http.Handler {
	return t.Guard(nil, Rule{Limit: limit, Key: t.IPKey})
}

// By limits requests per key; requests for which key reports false pass uncounted. A
// refused request gets onLimit, or a 429 problem when onLimit is nil; Retry-After and the
// RateLimit headers are set either way.
func (t *Throttles) By(limit Limit, key func(*http.Request) (string, bool), onLimit http.HandlerFunc) func(http.Handler) http.Handler {
	return t.Guard(onLimit, Rule{Limit: limit, Key: key})
}

// Guard checks every rule in one pass over the request, in order, counting it against each
// until one refuses. It writes the RateLimit headers once: those of the rule that refused,
// else of the rule with the fewest requests left (the later on a tie), as the IETF
// RateLimit header fields draft asks when several limits apply. A refused request gets
// onLimit, or a 429 problem when onLimit is nil, with Retry-After.
func (t *Throttles) Guard(onLimit http.HandlerFunc, rules ...Rule) func(http.Handler) http.Handler {
	if onLimit == nil {
		onLimit = func(w http.ResponseWriter, r *http.Request) {
			problem.Write(w, http.StatusTooManyRequests, "rate-limited", "Too many requests; retry after the time in Retry-After.")
		}
	}
	checks := make([]check, len(rules))
	for i, rule := range rules {
		checks[i] = check{
			Rule:    rule,
			counter: t.counterFor(rule.Limit),
			limit:   strconv.Itoa(rule.Limit.Requests),
			hits:    t.hits.WithLabelValues(rule.Limit.Name),
		}
	}
	return t.pass(checks, onLimit)
}

// pass is Guard's middleware over checks ready to run.
func (t *Throttles) pass(checks []check, onLimit http.HandlerFunc) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			now := time.Now()
			var tightest *check
			tightestLeft := 0
			for i := range checks {
				c := &checks[i]
				key, ok := c.Key(r)
				if !ok {
					continue
				}
				used, admitted, err := c.counter.take(key, now)
				if err != nil {
					t.opts.Log.ErrorContext(r.Context(), "throttle failed", "limit", c.Limit.Name, "error", err)
					problem.Unavailable(w, time.Second, "Please retry.")
					return
				}
				if !admitted {
					c.hits.Inc()
					reset := c.writeHeaders(w.Header(), c.Limit.Requests-used, now)
					w.Header()["Retry-After"] = []string{strconv.FormatInt(max(1, reset), 10)}
					onLimit(w, r)
					return
				}
				if left := c.Limit.Requests - used - 1; tightest == nil || left <= tightestLeft {
					tightest, tightestLeft = c, left
				}
			}
			if tightest != nil {
				tightest.writeHeaders(w.Header(), tightestLeft, now)
			}
			next.ServeHTTP(w, r)
		})
	}
}

// check is a rule ready to run: its counter, its limit already formatted, its metric.
type check struct {
	Rule
	counter counter
	limit   string
	hits    prometheus.Counter
}

// writeHeaders sets the IETF RateLimit header fields for left requests remaining, and
// gives the seconds until the window resets. The keys are in Go's canonical spelling,
// which is what goes on the wire anyway, so they are set without canonicalising.
func (c *check) writeHeaders(h http.Header, left int, now time.Time) int64 {
	reset := int64(now.Truncate(c.Limit.Window).Add(c.Limit.Window).Sub(now) / time.Second)
	h["Ratelimit-Limit"] = []string{c.limit}
	h["Ratelimit-Remaining"] = []string{strconv.Itoa(max(0, left))}
	h["Ratelimit-Reset"] = []string{strconv.FormatInt(reset, 10)}
	return reset
}

// counterFor is where limit's counts live: Redis when configured, else this process.
func (t *Throttles) counterFor(limit Limit) counter {
	if t.redis == nil {
		return newMemoryCounter(limit)
	}
	store := httprateredis.NewCounter(&httprateredis.Config{
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
	})
	store.Config(limit.Requests, limit.Window)
	return &sharedCounter{limit: limit, store: store}
}
