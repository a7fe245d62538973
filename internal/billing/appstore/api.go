package appstore

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/tollgate/tollgate/internal/billing"
)

// The App Store Server API's base URLs, by environment, as Apple's own server libraries
// use them.
const (
	ProductionAPI = "https://api.storekit.apple.com"
	SandboxAPI    = "https://api.storekit-sandbox.apple.com"
)

// tokenLifetime is how long a request token lasts. Apple refuses one whose exp is more than
// 60 minutes after its iat, and its documentation asks for a new token for each request;
// its libraries sign one valid for five minutes.
const tokenLifetime = 5 * time.Minute

// maxAttempts bounds the tries of one request that Apple throttles (429) or fails (5xx);
// maxNotFoundAttempts those of one answered by a 404 Apple says to try again.
const (
	maxAttempts         = 6
	maxNotFoundAttempts = 3
)

// APIConfig is an In-App Purchase key from App Store Connect, and which API it calls.
type APIConfig struct {
	KeyID, IssuerID string
	// PrivateKey is the key's .p8 file: a PKCS #8 PEM of a P-256 key.
	PrivateKey []byte
	// Environment is Production or Sandbox: the API called, and the only environment whose
	// signed items are taken from its answers.
	Environment string
	// BaseURL, when set, replaces the environment's (a stand-in's, in tests).
	BaseURL string
	// Pace, when above zero and under the store's own limit, is the most requests a second
	// (RECONCILE_PACE); the client never exceeds storeLimits whatever it says.
	Pace   float64
	Client *http.Client
	Clock  func() time.Time
	// Backoff is the first wait before a retry that Apple gave no Retry-After for, doubled
	// at each try (default a second).
	Backoff time.Duration
}

// storeLimits are the requests a second the client stays under, by environment: Apple
// allows about 50 in Production and 5 in Sandbox.
var storeLimits = map[string]float64{"Production": 40, "Sandbox": 4}

// API calls the App Store Server API for the adapter's app, and verifies every signed item
// of its answers as a notification is verified before it is used.
type API struct {
	adapter *Adapter
	cfg     APIConfig
	key     *ecdsa.PrivateKey
	pace    *rate.Limiter
}

// API builds a client of the App Store Server API with an In-App Purchase key.
func (a *Adapter) API(cfg APIConfig) (*API, error) {
	if cfg.KeyID == "" || cfg.IssuerID == "" {
		return nil, errors.New("an App Store Server API key needs its key id and issuer id")
	}
	key, err := parseP8(cfg.PrivateKey)
	if err != nil {
		return nil, err
	}
	if cfg.BaseURL == "" {
		switch cfg.Environment {
		case "Production":
			cfg.BaseURL = ProductionAPI
		case "Sandbox":
			cfg.BaseURL = SandboxAPI
		default:
			return nil, fmt.Errorf("the App Store Server API has no environment %q (Production or Sandbox)", cfg.Environment)
		}
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	limit := storeLimits["Sandbox"]
	if l, ok := storeLimits[cfg.Environment]; ok {
		limit = l
	}
	if cfg.Pace > 0 {
		limit = min(limit, cfg.Pace)
	}
	return &API{adapter: a, cfg: cfg, key: key, pace: rate.NewLimiter(rate.Limit(limit), 1)}, nil
}

// parseP8 reads the private key of a .p8 file.
func parseP8(p8 []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(p8)
	if block == nil {
		return nil, errors.New("the App Store private key is not PEM (want the .p8 file App Store Connect issued)")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	key, ok := parsed.(*ecdsa.PrivateKey)
	if err != nil || !ok {
		return nil, errors.New("the App Store private key is not a PKCS #8 EC key (want the .p8 file App Store Connect issued)")
	}
	return key, nil
}

// Environment is the environment the client calls.
func (c *API) Environment() string { return c.cfg.Environment }

// requestToken is the bearer of one request: a new one for each, as Apple asks.
func (c *API) requestToken() (string, error) {
	now := c.cfg.Clock()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": c.cfg.IssuerID, "iat": now.Unix(), "exp": now.Add(tokenLifetime).Unix(),
		"aud": "appstoreconnect-v1", "bid": c.adapter.bundleID,
	})
	tok.Header["kid"] = c.cfg.KeyID
	signed, err := tok.SignedString(c.key)
	if err != nil {
		return "", fmt.Errorf("signing the App Store request token: %w", err)
	}
	return signed, nil
}

// do sends one request and decodes its answer into out. What Apple says to try again —
// a 429, a 5xx, a 404 with a retryable code — is tried again after a wait: until the
// moment a 429's Retry-After names (UNIX milliseconds), or else a backoff that doubles.
// Any other refusal ends at once (errors.go).
func (c *API) do(ctx context.Context, method, path string, body, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return err
		}
	}
	backoff := c.cfg.Backoff
	for attempt := 1; ; attempt++ {
		retryAt, err := c.once(ctx, method, path, payload, out)
		var apiErr *APIError
		if err == nil || !errors.As(err, &apiErr) || !apiErr.retryable() || attempt >= apiErr.attempts() {
			return err
		}
		wait := backoff
		if !retryAt.IsZero() {
			wait = retryAt.Sub(c.cfg.Clock())
		}
		backoff *= 2
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(max(wait, 0)):
		}
	}
}

// once is one attempt: the moment a 429 says to retry at, and its error.
func (c *API) once(ctx context.Context, method, path string, payload []byte, out any) (time.Time, error) {
	if err := c.pace.Wait(ctx); err != nil {
		return time.Time{}, err
	}
	token, err := c.requestToken()
	if err != nil {
		return time.Time{}, err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.cfg.BaseURL+path, bytes.NewReader(payload))
	if err != nil {
		return time.Time{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		return time.Time{}, fmt.Errorf("the App Store Server API: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	switch {
	case err != nil:
		return time.Time{}, fmt.Errorf("the App Store Server API: %w", err)
	case resp.StatusCode == http.StatusOK:
		if err := json.Unmarshal(raw, out); err != nil {
			return time.Time{}, fmt.Errorf("the App Store Server API's answer: %s", billing.JSONProblem(err))
		}
		return time.Time{}, nil
	}
	var apple struct {
		ErrorCode int64 `json:"errorCode"`
	}
	json.Unmarshal(raw, &apple)
	var retryAt time.Time
	if ms, err := strconv.ParseInt(resp.Header.Get("Retry-After"), 10, 64); err == nil && ms > 0 {
		retryAt = time.UnixMilli(ms)
	}
	return retryAt, c.refusal(resp.StatusCode, apple.ErrorCode)
}
