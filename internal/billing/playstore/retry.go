package playstore

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Google's limits: a call to the Google Play Developer API that Google answers 429 (its
// quota) or a 5xx is tried again, after the wait its Retry-After names (seconds, or an
// HTTP date) or else a backoff doubling from a second, each wait at most maxWait, up to
// maxTries tries in all. After the last, Google's answer is the call's: a pass counts that
// subscription failed and goes on to the next, a history read fails and the next round
// resumes it, a notification's read answers 5xx so that Pub/Sub delivers it again.
const (
	maxTries = 5
	maxWait  = 2 * time.Minute
)

// retrying is the transport that tries again. perTry bounds each try (the client's
// timeout, which would otherwise bound every try together).
type retrying struct {
	base    http.RoundTripper
	perTry  time.Duration
	backoff time.Duration
}

func (rt *retrying) RoundTrip(req *http.Request) (*http.Response, error) {
	wait := rt.backoff
	for try := 1; ; try++ {
		resp, err := rt.once(req)
		if err != nil || try == maxTries || !retryable(resp.StatusCode) || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
			return resp, err
		}
		next := retryAfter(resp.Header.Get("Retry-After"), wait)
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(min(next, maxWait)):
		}
		wait *= 2
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
	}
}

// once is one try, within perTry: its deadline holds until its body is closed.
func (rt *retrying) once(req *http.Request) (*http.Response, error) {
	if rt.perTry <= 0 {
		return rt.base.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), rt.perTry)
	resp, err := rt.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

func retryable(status int) bool { return status == http.StatusTooManyRequests || status >= 500 }

// retryAfter is the wait a Retry-After header names (seconds, or an HTTP date), else
// fallback.
func retryAfter(header string, fallback time.Duration) time.Duration {
	if secs, err := strconv.Atoi(header); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(header); err == nil {
		return max(time.Until(at), 0)
	}
	return fallback
}
