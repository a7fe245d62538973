// Package authhook answers Supabase Auth's Custom Access Token hook (an HTTP hook): the
// identity service asks, each time it issues an access token, which claims the token
// carries; tollgate answers the claims it was given, unchanged, plus one claim of its own,
// tollgate — the user's billing answer — so that a backend (or a row-level-security
// policy) that checks the access token reads the plan with no call.
//
// The hook must never fail a sign-in: when the answer cannot be read within ReadWithin,
// the claims go back unchanged.
package authhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate/tollgate/internal/problem"
)

// Path is the hook's route.
const Path = "/hooks/custom-access-token"

// ReadWithin bounds the reading of a user's answer, so that the hook answers within 2 s
// whatever the database does: well inside the identity service's own limit (5 s), past
// which it fails the sign-in.
const ReadWithin = 1500 * time.Millisecond

// Claims answers the tollgate claim of a user (heldanswers.Issuer).
type Claims interface {
	Claim(ctx context.Context, userID string) (json.RawMessage, error)
}

// Options configures the hook.
type Options struct {
	Claims Claims
	// Secrets verify the requests (AUTH_HOOK_SECRET); none leaves the route unmounted.
	Secrets [][]byte
	MaxBody int64
	Clock   func() time.Time
	Log     *slog.Logger
	// Registerer takes the fallback counter; nil registers nothing.
	Registerer prometheus.Registerer
}

// Hook is the route's handler.
type Hook struct {
	opts      Options
	fallbacks prometheus.Counter
	mu        sync.Mutex
	down      bool // the answers could not be read: warned once until one is read again
}

// New returns the hook.
func New(opts Options) *Hook {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	h := &Hook{opts: opts, fallbacks: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tollgate_auth_hook_fallbacks_total",
		Help: "Custom Access Token hook requests answered with the claims unchanged, the billing answer being unreadable in time.",
	})}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(h.fallbacks)
	}
	return h
}

// Routes mounts the hook when a secret is set; without one the route is not there (404).
// It is never throttled: a refusal would fail a sign-in.
func (h *Hook) Routes(mux *http.ServeMux) {
	if len(h.opts.Secrets) > 0 {
		mux.Handle("POST "+Path, h)
	}
}

// input is the hook's request. Members beyond these (metadata) are ignored.
type input struct {
	UserID               *string         `json:"user_id"`
	Claims               json.RawMessage `json:"claims"`
	AuthenticationMethod *string         `json:"authentication_method"`
}

func (h *Hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		problem.Write(w, http.StatusRequestEntityTooLarge, "body-too-large", "The body is larger than this endpoint accepts.")
		return
	case err != nil:
		problem.Write(w, http.StatusBadRequest, "invalid-body", "The body could not be read.")
		return
	}
	if verify(h.opts.Secrets, r.Header, body, h.opts.Clock()) != nil {
		problem.Write(w, http.StatusUnauthorized, "invalid-signature", "The webhook signature is missing or does not match (AUTH_HOOK_SECRET).")
		return
	}
	var in input
	if json.Unmarshal(body, &in) != nil || in.UserID == nil || *in.UserID == "" || in.AuthenticationMethod == nil {
		problem.Write(w, http.StatusBadRequest, "invalid-body", "The body is not the Custom Access Token hook's input: {user_id, claims, authentication_method}.")
		return
	}
	claims, err := h.Customize(r.Context(), *in.UserID, in.Claims)
	if err != nil {
		problem.Write(w, http.StatusBadRequest, "invalid-body", "The body's claims are not a JSON object.")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(append([]byte(`{"claims":`), claims...), '}'))
}

// Customize is the hook's answer for one access token's claims: the claims unchanged
// plus tollgate, or unchanged when the answer cannot be read in time. The route answers
// with it, and the development identity service calls it for the tokens it issues.
func (h *Hook) Customize(ctx context.Context, userID string, claims json.RawMessage) (json.RawMessage, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(claims, &members); err != nil || members == nil {
		return nil, errNotAnObject
	}
	return withClaim(claims, members, h.claim(ctx, userID))
}

var errNotAnObject = errors.New("the claims are not a JSON object")

// claim is the user's tollgate claim, or nil when it cannot be read within ReadWithin:
// then the sign-in goes on without it, a warning is logged once per outage, and the
// fallback is counted.
func (h *Hook) claim(ctx context.Context, userID string) json.RawMessage {
	ctx, cancel := context.WithTimeout(ctx, ReadWithin)
	defer cancel()
	claim, err := h.opts.Claims.Claim(ctx, userID)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.fallbacks.Inc()
		if !h.down {
			h.down = true
			h.opts.Log.WarnContext(ctx, "the access token hook answers without the tollgate claim: the billing answer cannot be read",
				"within", ReadWithin.String(), "error", err.Error())
		}
		return nil
	}
	if h.down {
		h.down = false
		h.opts.Log.InfoContext(ctx, "the access token hook answers with the tollgate claim again")
	}
	return claim
}

// withClaim is raw (whose members are members) with the tollgate claim added, unless
// claim is nil: each member of raw keeps its bytes, and its place.
func withClaim(raw json.RawMessage, members map[string]json.RawMessage, claim json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case claim == nil:
		return raw, nil
	case members["tollgate"] != nil: // a claim of that name already: replaced, the rest re-encoded
		members["tollgate"] = claim
		return json.Marshal(members)
	}
	inner := bytes.TrimSpace(raw[1 : len(raw)-1])
	out := append([]byte{'{'}, inner...)
	if len(inner) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"tollgate":`...)
	out = append(out, claim...)
	return append(out, '}'), nil
}
