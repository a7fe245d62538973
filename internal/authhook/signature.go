package authhook

import (
	"crypto/hmac"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/outbound"
)

// Tolerance is how old (or how far ahead) a request's webhook-timestamp may be.
const Tolerance = 5 * time.Minute

var errSignature = errors.New("the hook's signature is missing or does not match")

// verify checks a Standard Webhooks request: the signature of "id.timestamp.body" under any
// of secrets (outbound.Sign, as tollgate signs its own) against any "v1,<signature>" of the
// webhook-signature header. The
// identity service signs once per configured secret and joins the signatures with ", ",
// where the standard separates them by spaces: both are read.
func verify(secrets [][]byte, h http.Header, body []byte, now time.Time) error {
	id, timestamp, header := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || timestamp == "" || header == "" {
		return errSignature
	}
	seconds, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return errSignature
	}
	if at := time.Unix(seconds, 0); now.Sub(at) > Tolerance || at.Sub(now) > Tolerance {
		return errSignature
	}
	for _, field := range strings.Fields(strings.ReplaceAll(header, ", ", " ")) {
		given := []byte(strings.TrimSuffix(field, ","))
		for _, secret := range secrets {
			// The same signature tollgate's outbound webhooks send: "v1," and the HMAC.
			if hmac.Equal([]byte(outbound.Sign(secret, id, time.Unix(seconds, 0), body)), given) {
				return nil
			}
		}
	}
	return errSignature
}
