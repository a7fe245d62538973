// Package jwks keeps a JSON Web Key Set fetched from a URL: the identity service's (API
// tokens) and Google's (Play's push tokens). It is fetched in the background or on first
// need, fetched again when a token names a kid it lacks (at most once per interval), and
// a fetch that fails or does not parse never replaces keys that work.
package jwks

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// ErrNoKeySet means no key set has ever been loaded, so no token can be judged: the API
// answers 503, not 401, and the client retries.
var ErrNoKeySet = errors.New("no key set loaded yet")

// ErrNoURL is ErrNoKeySet because no URL is configured: waiting will not help.
var ErrNoURL = fmt.Errorf("%w: no key set is configured", ErrNoKeySet)

// Options tune a KeySet; zero values take the defaults.
type Options struct {
	// RefreshInterval is the longest a key set is kept before it is fetched again; the
	// identity service's Cache-Control max-age shortens it.
	RefreshInterval time.Duration
	// UnknownKIDInterval spaces the refetches that an unknown kid may trigger.
	UnknownKIDInterval time.Duration
	// OnDemandTimeout bounds how long a request may wait for a fetch it needs.
	OnDemandTimeout time.Duration
	Client          *http.Client
	Log             *slog.Logger
	// Registerer takes tollgate_jwks_fetches_total; nil registers nothing.
	Registerer prometheus.Registerer
	// Clock paces the refetches (time.Now when nil).
	Clock func() time.Time
	// Name is what the log calls the set ("the key set" when empty).
	Name string
}

// KeySet is a JWKS: fetched in the background, refetched at most once
// per UnknownKIDInterval when a token names a kid it lacks, and never making a request wait
// longer than OnDemandTimeout.
type KeySet struct {
	url  string
	opts Options
	// limiters space on-demand fetches by trigger, each on its own budget: loading the key
	// set on first use must not spend the refetch an unknown kid (a rotated key) needs.
	limiters map[string]*rate.Limiter
	fetches  *prometheus.CounterVec

	mu       sync.Mutex
	keys     keyfunc.Keyfunc // nil until the first successful fetch
	digest   [32]byte
	version  uint64
	maxAge   time.Duration
	inflight chan struct{} // closed when the running fetch ends
}

// New prepares a key set for url. Nothing is fetched until Run or a token needs it.
func New(url string, opts Options) *KeySet {
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = 10 * time.Minute
	}
	if opts.UnknownKIDInterval <= 0 {
		opts.UnknownKIDInterval = time.Minute
	}
	if opts.OnDemandTimeout <= 0 {
		opts.OnDemandTimeout = 2 * time.Second
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Name == "" {
		opts.Name = "the key set"
	}
	ks := &KeySet{
		url: url, opts: opts,
		limiters: map[string]*rate.Limiter{
			triggerFirstUse:   rate.NewLimiter(rate.Every(opts.UnknownKIDInterval), 1),
			triggerUnknownKID: rate.NewLimiter(rate.Every(opts.UnknownKIDInterval), 1),
		},
		fetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_jwks_fetches_total", Help: "JWKS fetches by trigger (background, unknown_kid, first_use) and result (changed, unchanged, error).",
		}, []string{"trigger", "result"}),
	}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(ks.fetches)
	}
	return ks
}

// Run keeps the key set fresh until ctx ends: quickly retried (1 s doubling to 30 s) until
// the first load, then refreshed every RefreshInterval (or max-age, if shorter).
func (ks *KeySet) Run(ctx context.Context) {
	backoff := time.Second
	failing := false
	for {
		err := ks.fetch(ctx, "background")
		wait := ks.refreshInterval()
		switch {
		case err != nil && ctx.Err() == nil:
			if !failing {
				ks.opts.Log.Warn("cannot fetch "+ks.opts.Name+"; retrying", "url", ks.url, "error", err)
			}
			failing = true
			if !ks.Loaded() {
				wait, backoff = backoff, min(2*backoff, 30*time.Second)
			}
		case err == nil && failing:
			failing, backoff = false, time.Second
			ks.opts.Log.Info(ks.opts.Name+" fetched again", "url", ks.url)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// Loaded reports whether a key set has ever been fetched.
func (ks *KeySet) Loaded() bool {
	keys, _ := ks.current()
	return keys != nil
}

// Version changes whenever the fetched key set differs from the one before.
func (ks *KeySet) Version() uint64 {
	_, version := ks.current()
	return version
}

func (ks *KeySet) refreshInterval() time.Duration {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if ks.maxAge > 0 && ks.maxAge < ks.opts.RefreshInterval {
		return max(ks.maxAge, 10*time.Second)
	}
	return ks.opts.RefreshInterval
}

// Key finds the verification key for a token. An unknown kid triggers one rate-limited
// refetch, shared by every request that arrives while it runs.
func (ks *KeySet) Key(ctx context.Context, token *jwt.Token) (any, error) {
	return ks.KeyAt(ctx, token, ks.opts.Clock())
}

// KeyAt is Key for a request received at now, which paces the refetches.
func (ks *KeySet) KeyAt(ctx context.Context, token *jwt.Token, now time.Time) (any, error) {
	if ks.url == "" {
		return nil, ErrNoURL
	}
	keys, version := ks.current()
	if keys == nil {
		if ks.fetchOnDemand(ctx, triggerFirstUse, now) != nil {
			return nil, ErrNoKeySet
		}
		if keys, version = ks.current(); keys == nil {
			return nil, ErrNoKeySet
		}
	}
	key, err := keys.KeyfuncCtx(ctx)(token)
	if err == nil || !errors.Is(err, jwkset.ErrKeyNotFound) {
		return key, err
	}
	// Another fetch may already have brought the kid in since this lookup began.
	if ks.Version() == version && ks.fetchOnDemand(ctx, triggerUnknownKID, now) != nil {
		return nil, err
	}
	if keys, latest := ks.current(); latest != version {
		return keys.KeyfuncCtx(ctx)(token)
	}
	return nil, err
}

// current is the installed key set and its version, read together.
func (ks *KeySet) current() (keyfunc.Keyfunc, uint64) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return ks.keys, ks.version
}

// On-demand fetch triggers, as counted in tollgate_jwks_fetches_total.
const (
	triggerFirstUse   = "first_use"
	triggerUnknownKID = "unknown_kid"
)

// fetchOnDemand joins a fetch already running, or starts one if the limiter allows, and
// waits for it at most OnDemandTimeout. It never queues behind the limiter.
func (ks *KeySet) fetchOnDemand(ctx context.Context, trigger string, now time.Time) error {
	ks.mu.Lock()
	done := ks.inflight
	if done == nil {
		if !ks.limiters[trigger].AllowN(now, 1) {
			ks.mu.Unlock()
			return errors.New("key set refetch rate-limited")
		}
		done = make(chan struct{})
		ks.inflight = done
		go func() {
			// Detached from the request: a client that gives up does not cancel the fetch
			// the other waiters share.
			fetchCtx, cancel := context.WithTimeout(context.Background(), ks.opts.OnDemandTimeout)
			defer cancel()
			ks.fetch(fetchCtx, trigger)
			ks.mu.Lock()
			ks.inflight = nil
			ks.mu.Unlock()
			close(done)
		}()
	}
	ks.mu.Unlock()
	wait, cancel := context.WithTimeout(ctx, ks.opts.OnDemandTimeout)
	defer cancel()
	select {
	case <-done:
		return nil
	case <-wait.Done():
		return wait.Err()
	}
}

func (ks *KeySet) fetch(ctx context.Context, trigger string) error {
	raw, maxAge, err := ks.download(ctx)
	changed := false
	if err == nil {
		changed, err = ks.install(raw, maxAge)
	}
	result := "unchanged"
	switch {
	case err != nil:
		result = "error"
	case changed:
		result = "changed"
	}
	ks.fetches.WithLabelValues(trigger, result).Inc()
	return err
}

func (ks *KeySet) download(ctx context.Context) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ks.url, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := ks.opts.Client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("key set answered %s", resp.Status)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, 0, err
	}
	return raw, maxAge(resp.Header.Get("Cache-Control")), nil
}

// install swaps in a fetched key set; a set that fails to parse is refused whole so a
// broken response never replaces working keys.
func (ks *KeySet) install(raw []byte, maxAge time.Duration) (bool, error) {
	digest := sha256.Sum256(raw)
	ks.mu.Lock()
	same := ks.keys != nil && digest == ks.digest
	ks.maxAge = maxAge
	ks.mu.Unlock()
	if same {
		return false, nil
	}
	keys, err := keyfunc.NewJWKSetJSON(raw)
	if err != nil {
		return false, fmt.Errorf("key set unusable: %w", err)
	}
	ks.mu.Lock()
	ks.keys, ks.digest = keys, digest
	ks.version++
	ks.mu.Unlock()
	return true, nil
}

func maxAge(cacheControl string) time.Duration {
	for _, directive := range strings.Split(cacheControl, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(directive), "max-age="); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				return time.Duration(n) * time.Second
			}
		}
	}
	return 0
}
