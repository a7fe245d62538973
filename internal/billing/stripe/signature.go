package stripe

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// SignatureTolerance is how far the web signature's timestamp may be from now, either way.
const SignatureTolerance = 300 * time.Second

var (
	errMalformedHeader  = errors.New("malformed signature header")
	errTimestampOutside = errors.New("signature timestamp outside tolerance")
)

// Web signature headers: the specification's neutral name, and the one the real provider
// (Stripe) sends. Either is accepted with the same rules.
const (
	HeaderWebSignature    = "Web-Signature"
	HeaderStripeSignature = "Stripe-Signature"
)

// signature is a parsed Web-Signature header: t=<unix>,v1=<hex>[,v1=<hex>…].
type signature struct {
	timestamp int64
	v1        [][]byte
}

// parseSignature reads the header. Unknown schemes (v0 and others) are ignored; a header
// without a timestamp or without any v1 is malformed.
func parseSignature(header string) (signature, error) {
	var sig signature
	haveT := false
	if len(header) > 8<<10 {
		return sig, errMalformedHeader
	}
	for _, part := range strings.Split(header, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return sig, errMalformedHeader
		}
		switch key {
		case "t":
			if haveT {
				return sig, errMalformedHeader
			}
			t, err := strconv.ParseInt(value, 10, 64)
			if err != nil || t <= 0 {
				return sig, errMalformedHeader
			}
			sig.timestamp, haveT = t, true
		case "v1":
			mac, err := hex.DecodeString(value)
			if err != nil || len(mac) != sha256.Size {
				continue // a garbled entry cannot match; another v1 still may
			}
			sig.v1 = append(sig.v1, mac)
		}
	}
	if !haveT || len(sig.v1) == 0 {
		return sig, errMalformedHeader
	}
	return sig, nil
}

// verifySignature checks header against body as the web provider signs it:
// HMAC-SHA256(secret, "<t>.<body>"), any v1 matching, t within ±tolerance of now.
func verifySignature(secret, header string, body []byte, now time.Time) error {
	if secret == "" {
		return billing.ErrNoSecret
	}
	sig, err := parseSignature(header)
	if err != nil {
		return err
	}
	age := now.Unix() - sig.timestamp
	if age > int64(SignatureTolerance/time.Second) || -age > int64(SignatureTolerance/time.Second) {
		return errTimestampOutside
	}
	expected := signWeb(secret, sig.timestamp, body)
	for _, mac := range sig.v1 {
		if hmac.Equal(mac, expected) {
			return nil
		}
	}
	return billing.ErrSignatureMismatch
}

func signWeb(secret string, timestamp int64, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(timestamp, 10)))
	mac.Write([]byte("."))
	mac.Write(body)
	return mac.Sum(nil)
}

// SignHeader builds the value of a web signature header for body, as the web provider would.
func SignHeader(secret string, timestamp time.Time, body []byte) string {
	t := timestamp.Unix()
	return "t=" + strconv.FormatInt(t, 10) + ",v1=" + hex.EncodeToString(signWeb(secret, t, body))
}
