package app

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate/tollgate/internal/authhook"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/heldanswers"
	"github.com/tollgate/tollgate/internal/problem"
	"github.com/tollgate/tollgate/internal/signingkeys"
)

// heldParts are the answers apps hold rather than ask for: tollgate's signing keys and
// their key set, the entitlement tokens they sign, and the identity service's access
// token hook.
type heldParts struct {
	keys   *signingkeys.Keys
	issuer *heldanswers.Issuer
	hook   *authhook.Hook
}

func newHeldAnswers(d *db.DB, e env, answers *reader.Reader, reg prometheus.Registerer) *heldParts {
	keys := signingkeys.New(d, nil)
	issuer := heldanswers.New(heldanswers.Options{Answers: answers, Keys: keys, Issuer: e.cfg.PublicURL,
		Audience: e.cfg.HeldAnswers.Audience, TTL: e.cfg.HeldAnswers.TTL, Log: e.log})
	hook := authhook.New(authhook.Options{Claims: issuer, Secrets: e.cfg.HeldAnswers.HookSecrets, MaxBody: e.cfg.WebhookMaxBody,
		Log: e.log, Registerer: reg})
	return &heldParts{keys: keys, issuer: issuer, hook: hook}
}

// routes mounts the key set and, when AUTH_HOOK_SECRET is set, the hook.
func (h *heldParts) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /.well-known/jwks.json", h.jwks)
	h.hook.Routes(mux)
}

// jwks serves the public keys that verify tollgate's tokens still in use. Anyone may read
// them (from any origin), and keep them for signingkeys.MaxAge.
func (h *heldParts) jwks(w http.ResponseWriter, r *http.Request) {
	body, err := h.keys.JWKS(r.Context())
	if err != nil {
		problem.Unavailable(w, 5*time.Second, "The key set cannot be read; retry shortly.")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", int(signingkeys.MaxAge/time.Second)))
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Write(body)
}
