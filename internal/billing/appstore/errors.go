package appstore

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/tollgate/tollgate/internal/billing"
)

// Apple's errorCodes that tollgate reads, as the App Store Server API defines them.
const (
	codeStartTooOld         = 4000012 // startDate is further back than the history is kept
	codePageExpired         = 4000017 // the paginationToken has expired
	codeAccountNotFound     = 4040001
	codeAccountNotFoundTry  = 4040002
	codeAppNotFound         = 4040003
	codeAppNotFoundTry      = 4040004
	codeOriginalNotFoundTry = 4040006
	codeRateLimited         = 4290000
	codeInternalTry         = 5000001
)

// ErrAPIKeyRefused is Apple refusing the request token (401): the key settings are wrong,
// or the environment does not take the key yet (Production refuses it until the app's
// first release). No retry can help.
var ErrAPIKeyRefused = errors.New("the App Store Server API refused the request token (401)")

// APIError is an answer of the API that is not a success: its status, Apple's errorCode
// when it sent one, and the environment and app asked about, for the message.
type APIError struct {
	Status      int
	Code        int64
	Environment string
	BundleID    string
}

func (e *APIError) Error() string {
	switch {
	case e.Status == http.StatusUnauthorized:
		return fmt.Sprintf("the App Store Server API (%s) refused the request token (401): check APPSTORE_KEY_ID, APPSTORE_ISSUER_ID and APPSTORE_PRIVATE_KEY_FILE (Production refuses every key until the app's first release)", e.Environment)
	case e.Code == codeAppNotFound:
		return fmt.Sprintf("the App Store Server API (%s) knows no app %q (errorCode 4040003): check APPSTORE_BUNDLE_ID, and that the app exists in %s", e.Environment, e.BundleID, e.Environment)
	case e.Code == codeAccountNotFound:
		return fmt.Sprintf("the App Store Server API (%s) knows no account for the key (errorCode 4040001): check APPSTORE_ISSUER_ID, APPSTORE_KEY_ID and APPSTORE_PRIVATE_KEY_FILE", e.Environment)
	}
	return fmt.Sprintf("the App Store Server API (%s) answered %d (errorCode %d)", e.Environment, e.Status, e.Code)
}

// Is lets the answer be read by what it means: a refusal of tollgate itself, a history
// start too old, a page token expired.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrAPIKeyRefused:
		return e.Status == http.StatusUnauthorized
	case billing.ErrAPIRefused:
		return e.Status == http.StatusUnauthorized || e.Code == codeAppNotFound || e.Code == codeAccountNotFound
	case billing.ErrHistoryStartTooOld:
		return e.Code == codeStartTooOld
	case billing.ErrHistoryPageExpired:
		return e.Code == codePageExpired
	}
	return false
}

// retryable: Apple says the same request may succeed later — throttled, a passing failure
// of its own, or a "not found" it marks as worth another try.
func (e *APIError) retryable() bool {
	switch e.Code {
	case codeRateLimited, codeInternalTry, codeAccountNotFoundTry, codeAppNotFoundTry, codeOriginalNotFoundTry:
		return true
	}
	return e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// attempts is how many tries a retryable answer gets: fewer for a "not found, try again",
// which a later pass reads again anyway.
func (e *APIError) attempts() int {
	if e.Status == http.StatusNotFound {
		return maxNotFoundAttempts
	}
	return maxAttempts
}

// refusal is the error of an answer with status and Apple's errorCode.
func (c *API) refusal(status int, code int64) error {
	return &APIError{Status: status, Code: code, Environment: c.cfg.Environment, BundleID: c.adapter.bundleID}
}
