// Package webhooks is billing's HTTP surface for providers: one route per adapter under
// the billing mount, each reading a bounded body, verifying it on the raw bytes, naming
// the event and handing it to the pipeline, and answering 200 only once it is stored.
package webhooks

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
)

// Headers of a webhook's 200 answer saying what became of the event (docs/billing.md).
const (
	HeaderOutcome = "Tollgate-Outcome"
	HeaderUserID  = "Tollgate-User-Id"
	HeaderReason  = "Tollgate-Reason"
)

// Options configures the webhook routes.
type Options struct {
	// Adapters are the providers given a route, each at webhooks/{provider}.
	Adapters []billing.Adapter
	MaxBody  int64
	Clock    func() time.Time
	// Registerer, when set, counts deliveries by provider and outcome.
	Registerer prometheus.Registerer
}

// Webhooks receives providers' webhooks.
type Webhooks struct {
	pipeline *pipeline.Pipeline
	log      *slog.Logger
	adapters []billing.Adapter
	maxBody  int64
	now      func() time.Time
	outcomes *prometheus.CounterVec
}

// New builds the webhook surface over a pipeline.
func New(p *pipeline.Pipeline, log *slog.Logger, opts Options) *Webhooks {
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	w := &Webhooks{
		pipeline: p, log: log, adapters: opts.Adapters, maxBody: opts.MaxBody, now: clock,
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_webhook_events_total",
			Help: "Webhook deliveries by provider and outcome (applied, duplicate, stale, ignored, unresolved, invalid, or the reason it was refused).",
		}, []string{"provider", "outcome"}),
	}
	if w.maxBody <= 0 {
		w.maxBody = 1 << 20
	}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(w.outcomes)
	}
	return w
}

// serve is the path of one delivery (docs/billing.md): bounded read, verification on the
// raw bytes, JSON, the event's name, one transaction, 200.
func (h *Webhooks) serve(w http.ResponseWriter, r *http.Request, a billing.Adapter) {
	start := time.Now()
	provider := a.Provider()
	body, err := readLimited(w, r, h.maxBody)
	if err != nil {
		h.refuse(w, r, provider, len(body), err)
		return
	}
	if err := a.Verify(r.Header, body, h.now()); err != nil {
		var unreadable *billing.BodyError
		if !errors.As(err, &unreadable) {
			err = &refusal{err}
		}
		h.refuse(w, r, provider, len(body), err)
		return
	}
	if body, err = billing.StorableJSON(body); err != nil {
		h.refuse(w, r, provider, len(body), billing.BadJSON(err))
		return
	}
	ev, err := a.Parse(body)
	if err != nil {
		h.refuse(w, r, provider, len(body), err)
		return
	}
	if ev.Answer != nil {
		if ev.Answer.Log != "" {
			h.log.InfoContext(r.Context(), ev.Answer.Log, "provider", provider, "outcome", ev.Answer.Outcome)
		}
		h.answer(w, provider, *ev.Answer)
		return
	}
	done, err := h.pipeline.Ingest(r.Context(), provider, ev, body)
	if err != nil {
		h.refuse(w, r, provider, len(body), &unavailable{err})
		return
	}
	h.outcomes.WithLabelValues(provider, done.Outcome).Inc()
	h.log.InfoContext(r.Context(), "webhook received", "provider", provider, "event_id", ev.ID, "event_type", ev.Type,
		"bytes", len(body), "outcome", done.Outcome, "duration", time.Since(start))
	// The outcome goes back in headers for "tollgate webhook send" and anyone debugging
	// a delivery; the body stays the {"received":true} the providers expect.
	w.Header().Set(HeaderOutcome, done.Outcome)
	if done.UserID != "" && done.Outcome != billing.OutcomeUnresolved { // an unresolved event's user is only named, not resolved
		w.Header().Set(HeaderUserID, done.UserID)
	}
	if done.Reason != "" {
		w.Header().Set(HeaderReason, done.Reason)
	}
	writeReceived(w)
}

// answer gives a 200 that records nothing (a set-up probe, a filtered environment).
func (h *Webhooks) answer(w http.ResponseWriter, provider string, a billing.Answer) {
	h.outcomes.WithLabelValues(provider, a.Outcome).Inc()
	w.Header().Set(HeaderOutcome, a.Outcome)
	if a.Body == nil {
		writeReceived(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(a.Body)
}

func readLimited(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, errBodyTooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return body, errBodyTooLarge
	}
	return body, err
}

func writeReceived(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"received":true}`+"\n")
}
