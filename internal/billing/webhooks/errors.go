package webhooks

import (
	"errors"
	"net/http"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/problem"
)

var errBodyTooLarge = errors.New("body too large")

// refusal is a request that failed verification, whatever the adapter's reason (a
// signature, a key set it could not fetch): a refusal, 401. unavailable is an event that
// could not be stored, or read from its provider first: no kind, 503.
type refusal struct{ err error }
type unavailable struct{ err error }

func (e *refusal) Error() string      { return e.err.Error() }
func (e *refusal) Kind() billing.Kind { return billing.KindRefused }
func (e *unavailable) Error() string  { return e.err.Error() }

// answer is what a refused delivery gets: the status the provider sees, a safe public
// detail, and the outcome label for logs and metrics.
type answer struct {
	status  int
	kind    string
	outcome string
	detail  string
}

// answerTo maps an error to its answer by its kind: the one place webhook failures become
// statuses.
func answerTo(err error) answer {
	if errors.Is(err, errBodyTooLarge) {
		return answer{http.StatusRequestEntityTooLarge, "body-too-large", "too_large", "The body is larger than this endpoint accepts."}
	}
	var body *billing.BodyError
	switch billing.KindOf(err) {
	case billing.KindRefused:
		return answer{http.StatusUnauthorized, "invalid-signature", "unauthorized", "The webhook signature or authorization is missing or does not match."}
	case billing.KindInvalid:
		if errors.As(err, &body) {
			return answer{http.StatusBadRequest, "invalid-body", body.Outcome, body.Error() + "."}
		}
	case "":
		if errors.As(err, new(*unavailable)) {
			return answer{http.StatusServiceUnavailable, "unavailable", "unavailable", "The event could not be stored; retry later."}
		}
	}
	return answer{http.StatusBadRequest, "invalid-body", "unreadable", "The body could not be read."}
}

// refuse writes a refused delivery's answer. The public detail never includes the body,
// the secret or a database message; the cause goes to the log.
func (h *Webhooks) refuse(w http.ResponseWriter, r *http.Request, provider string, size int, err error) {
	a := answerTo(err)
	h.outcomes.WithLabelValues(provider, a.outcome).Inc()
	level := h.log.WarnContext
	if a.status >= 500 {
		level = h.log.DebugContext // the database's outage log reports it, once per outage
	}
	attrs := []any{"provider", provider, "status", a.status, "outcome", a.outcome, "bytes", size}
	if a.outcome != "too_large" {
		attrs = append(attrs, "error", err.Error())
	}
	level(r.Context(), "webhook refused", attrs...)
	if a.status == http.StatusServiceUnavailable {
		problem.Unavailable(w, 5*time.Second, a.detail)
		return
	}
	problem.Write(w, a.status, a.kind, a.detail)
}
