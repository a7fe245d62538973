package authhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Tolerance is how old (or how far ahead) a request's webhook-timestamp may be.
const Tolerance = 5 * time.Minute

var errSignature = errors.New("the hook's signature is missing or does not match")

// verify checks a Standard Webhooks request: HMAC-SHA256 of "id.timestamp.body" under any
// of secrets, base64, against any "v1,<signature>" of the webhook-signature header. The
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
	signed := []byte(id + "." + timestamp + "." + string(body))
	for _, field := range strings.Fields(strings.ReplaceAll(header, ", ", " ")) {
		version, signature, ok := strings.Cut(strings.TrimSuffix(field, ","), ",")
		if !ok || version != "v1" {
			continue
		}
		given, err := base64.StdEncoding.DecodeString(signature)
		if err != nil {
			continue
		}
		for _, secret := range secrets {
			mac := hmac.New(sha256.New, secret)
			mac.Write(signed)
			if hmac.Equal(mac.Sum(nil), given) {
				return nil
			}
		}
	}
	return errSignature
}
