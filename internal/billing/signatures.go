package billing

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// SignatureTolerance is how far the web signature's timestamp may be from now, either way.
const SignatureTolerance = 300 * time.Second

var (
	errNoSecret          = errors.New("no signing secret configured")
	errMalformedHeader   = errors.New("malformed signature header")
	errTimestampOutside  = errors.New("signature timestamp outside tolerance")
	errSignatureMismatch = errors.New("no signature matches")
	errMissingHeader     = errors.New("no signature or authorization header")
	errAmbiguousHeader   = errors.New("more than one signature or authorization header")
)

// Web signature headers: the specification's neutral name, and the one the real provider
// (Stripe) sends. Either is accepted with the same rules.
const (
	HeaderWebSignature    = "Web-Signature"
	HeaderStripeSignature = "Stripe-Signature"
)

// singleHeader is the one value a request carries under any of names. Two values, under one
// name or several, are refused rather than guessed at: which of them a proxy or an attacker
// added cannot be told.
func singleHeader(h http.Header, names ...string) (string, error) {
	var values []string
	for _, name := range names {
		values = append(values, h.Values(name)...)
	}
	switch len(values) {
	case 0:
		return "", errMissingHeader
	case 1:
		return values[0], nil
	}
	return "", errAmbiguousHeader
}

// webSignature is a parsed Web-Signature header: t=<unix>,v1=<hex>[,v1=<hex>…].
type webSignature struct {
	timestamp int64
	v1        [][]byte
}

// parseWebSignature reads the header. Unknown schemes (v0 and others) are ignored; a header
// without a timestamp or without any v1 is malformed.
func parseWebSignature(header string) (webSignature, error) {
	var sig webSignature
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

// verifyWebSignature checks header against body as the web provider signs it:
// HMAC-SHA256(secret, "<t>.<body>"), any v1 matching, t within ±tolerance of now.
func verifyWebSignature(secret, header string, body []byte, now time.Time) error {
	if secret == "" {
		return errNoSecret
	}
	sig, err := parseWebSignature(header)
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
	return errSignatureMismatch
}

func signWeb(secret string, timestamp int64, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(timestamp, 10)))
	mac.Write([]byte("."))
	mac.Write(body)
	return mac.Sum(nil)
}

// SignWebHeader builds the value of a web signature header for body, as the web provider would.
func SignWebHeader(secret string, timestamp time.Time, body []byte) string {
	t := timestamp.Unix()
	return "t=" + strconv.FormatInt(t, 10) + ",v1=" + hex.EncodeToString(signWeb(secret, t, body))
}

// verifyMobileAuthorization compares the Authorization header with the shared secret in
// constant time. Hashing both first makes the comparison fixed-length, so not even the
// secret's length leaks.
func verifyMobileAuthorization(secret, header string) error {
	if secret == "" {
		return errNoSecret
	}
	if header == "" {
		return errSignatureMismatch
	}
	want := sha256.Sum256([]byte(secret))
	got := sha256.Sum256([]byte(header))
	if subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
		return errSignatureMismatch
	}
	return nil
}
