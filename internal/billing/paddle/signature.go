package paddle

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// HeaderSignature is the header Paddle signs its notifications in:
// "ts=<unix seconds>;h1=<hex HMAC-SHA256 of ts:body>", with one h1 per secret while a
// secret is rotated.
const HeaderSignature = "Paddle-Signature"

// SignatureTolerance is how old a signature may be: an older one is refused, so that a
// captured notification cannot be played again later. Paddle's own SDKs default to 5 s;
// retries are signed anew, so minutes are room enough for clocks apart.
const SignatureTolerance = 5 * time.Minute

var (
	errMalformedSignature = errors.New("the Paddle-Signature header is not ts=…;h1=…")
	errTimestampOutside   = errors.New("the signature's timestamp is more than 5 minutes from now")
)

// verify checks header against body with any of secrets: any h1 that one of them signed
// is enough, keys other than ts and h1 are ignored, as Paddle's SDKs do.
func verify(secrets []string, header string, body []byte, now time.Time) error {
	if len(secrets) == 0 {
		return billing.ErrNoSecret
	}
	ts, macs, err := parseSignature(header)
	if err != nil {
		return err
	}
	if age := now.Unix() - ts; age > int64(SignatureTolerance/time.Second) || -age > int64(SignatureTolerance/time.Second) {
		return errTimestampOutside
	}
	for _, secret := range secrets {
		expected := sign(secret, ts, body)
		for _, mac := range macs {
			if hmac.Equal(mac, expected) {
				return nil
			}
		}
	}
	return billing.ErrSignatureMismatch
}

func parseSignature(header string) (ts int64, macs [][]byte, err error) {
	seen := false
	for _, part := range strings.Split(header, ";") {
		key, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch key {
		case "ts":
			if seen {
				return 0, nil, errMalformedSignature
			}
			if ts, err = strconv.ParseInt(value, 10, 64); err != nil {
				return 0, nil, errMalformedSignature
			}
			seen = true
		case "h1":
			if mac, err := hex.DecodeString(value); err == nil && len(mac) == sha256.Size {
				macs = append(macs, mac)
			}
		}
	}
	if !seen || len(macs) == 0 {
		return 0, nil, errMalformedSignature
	}
	return ts, macs, nil
}

func sign(secret string, ts int64, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(ts, 10)))
	mac.Write([]byte(":"))
	mac.Write(body)
	return mac.Sum(nil)
}

// SignHeader is the Paddle-Signature of body at t, with an h1 for each secret, as Paddle
// signs a notification (several during a rotation).
func SignHeader(t time.Time, body []byte, secrets ...string) string {
	ts := t.Unix()
	header := "ts=" + strconv.FormatInt(ts, 10)
	for _, secret := range secrets {
		header += ";h1=" + hex.EncodeToString(sign(secret, ts, body))
	}
	return header
}

// signatureOf is the request's one Paddle-Signature.
func signatureOf(h http.Header) (string, error) { return billing.SingleHeader(h, HeaderSignature) }
