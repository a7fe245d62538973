package billing

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/tollgate/tollgate/internal/problem"
)

// webhookError is a refused delivery: the status the provider sees, a safe public detail,
// and the outcome label for logs and metrics.
type webhookError struct {
	status  int
	kind    string
	outcome string
	detail  string
	cause   error
}

func (e *webhookError) Error() string { return e.outcome }

var errBodyTooLarge = errors.New("body too large")

// Headers of a webhook's 200 answer saying what became of the event (docs/billing.md).
const (
	HeaderOutcome = "Tollgate-Outcome"
	HeaderUserID  = "Tollgate-User-Id"
	HeaderReason  = "Tollgate-Reason"
)

func (s *Service) webWebhook(w http.ResponseWriter, r *http.Request) {
	s.serveWebhook(w, r, ProviderWeb, func(body []byte) error {
		header, err := singleHeader(r.Header, HeaderWebSignature, HeaderStripeSignature)
		if err != nil {
			return err
		}
		return verifyWebSignature(s.webSecret, header, body, s.now())
	}, webEnvelope)
}

func (s *Service) mobileWebhook(w http.ResponseWriter, r *http.Request) {
	s.serveWebhook(w, r, ProviderMobile, func([]byte) error {
		header, err := singleHeader(r.Header, "Authorization")
		if err != nil {
			return err
		}
		return verifyMobileAuthorization(s.mobileSecret, header)
	}, mobileEnvelope)
}

// serveWebhook is the pipeline (docs/billing.md): bounded read, verification on the
// raw bytes, JSON, event id, one transaction, 200.
func (s *Service) serveWebhook(w http.ResponseWriter, r *http.Request, provider string,
	verify func(body []byte) error, envelopeOf func(map[string]json.RawMessage) (envelope, error)) {
	start := time.Now()
	var top map[string]json.RawMessage
	body, err := readLimited(w, r, s.maxBody)
	if err != nil {
		s.refuse(w, r, provider, len(body), err)
		return
	}
	if err := verify(body); err != nil {
		s.refuse(w, r, provider, len(body), &webhookError{status: http.StatusUnauthorized, kind: "invalid-signature",
			outcome: "unauthorized", detail: "The webhook signature or authorization is missing or does not match.", cause: err})
		return
	}
	badJSON := func(err error) {
		s.refuse(w, r, provider, len(body), &webhookError{status: http.StatusBadRequest, kind: "invalid-body",
			outcome: "bad_json", detail: err.Error() + ".", cause: err})
	}
	stored, err := storableJSON(body)
	if err != nil {
		badJSON(err)
		return
	}
	body = stored
	// A web event is read once, for its envelope and its processor alike; anything else,
	// or a web body that needs it, takes the general path.
	var env envelope
	var decoded *webEvent
	if provider == ProviderWeb {
		env, decoded, err = decodeWebEvent(body)
	}
	if decoded == nil && err == nil {
		if top, err = decodeTop(body); err != nil {
			badJSON(err)
			return
		}
		if provider == ProviderMobile && len(top["event_type"]) == 0 {
			s.mobileSetupCheck(w, top)
			return
		}
		env, err = envelopeOf(top)
	}
	if err != nil {
		s.refuse(w, r, provider, len(body), &webhookError{status: http.StatusBadRequest, kind: "invalid-body",
			outcome: "bad_event_id", detail: err.Error() + ".", cause: err})
		return
	}
	done, err := s.ingest(r.Context(), provider, env.ID, env.Type, body, decoded)
	if err != nil {
		s.refuse(w, r, provider, len(body), &webhookError{status: http.StatusServiceUnavailable, kind: "unavailable",
			outcome: "unavailable", detail: "The event could not be stored; retry later.", cause: err})
		return
	}
	s.outcomes.WithLabelValues(provider, done.Outcome).Inc()
	s.log.InfoContext(r.Context(), "webhook received", "provider", provider, "event_id", env.ID, "event_type", env.Type,
		"bytes", len(body), "outcome", done.Outcome, "duration", time.Since(start))
	// The outcome goes back in headers for "tollgate webhook send" and anyone debugging
	// a delivery; the body stays the {"received":true} the providers expect.
	w.Header().Set(HeaderOutcome, done.Outcome)
	if done.UserID != "" {
		w.Header().Set(HeaderUserID, done.UserID)
	}
	if done.Reason != "" {
		w.Header().Set(HeaderReason, done.Reason)
	}
	writeReceived(w)
}

// mobileSetupCheck answers the mobile provider's set-up request (a body without
// event_type), echoing its check value as the provider expects, and records nothing.
func (s *Service) mobileSetupCheck(w http.ResponseWriter, top map[string]json.RawMessage) {
	s.outcomes.WithLabelValues(ProviderMobile, "setup_check").Inc()
	w.Header().Set(HeaderOutcome, "setup_check")
	resp := map[string]any{"received": true}
	if check, ok := top["adapty_check"]; ok {
		resp["adapty_check_response"] = check
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

// refuse is the one place webhook failures become HTTP responses. The public detail never
// includes the body, the secret or a database message; the cause goes to the log.
func (s *Service) refuse(w http.ResponseWriter, r *http.Request, provider string, size int, err error) {
	var we *webhookError
	switch {
	case errors.As(err, &we):
	case errors.Is(err, errBodyTooLarge):
		we = &webhookError{status: http.StatusRequestEntityTooLarge, kind: "body-too-large", outcome: "too_large",
			detail: "The body is larger than this endpoint accepts."}
	default:
		we = &webhookError{status: http.StatusBadRequest, kind: "invalid-body", outcome: "unreadable",
			detail: "The body could not be read.", cause: err}
	}
	s.outcomes.WithLabelValues(provider, we.outcome).Inc()
	level := s.log.WarnContext
	if we.status >= 500 {
		level = s.log.DebugContext // the database's outage log reports it, once per outage
	}
	attrs := []any{"provider", provider, "status", we.status, "outcome", we.outcome, "bytes", size}
	if we.cause != nil {
		attrs = append(attrs, "error", we.cause.Error())
	}
	level(r.Context(), "webhook refused", attrs...)
	if we.status == http.StatusServiceUnavailable {
		problem.Unavailable(w, 5*time.Second, we.detail)
		return
	}
	problem.Write(w, we.status, we.kind, we.detail)
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
