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
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/tollgate/tollgate/internal/billing"
)

// The App Store Server API's base URLs, by environment.
const (
	ProductionAPI = "https://api.storekit.itunes.apple.com"
	SandboxAPI    = "https://api.storekit-sandbox.itunes.apple.com"
)

// tokenLifetime is how long a request token lasts: Apple refuses one whose exp is more
// than 60 minutes after its iat.
const tokenLifetime = 20 * time.Minute

// maxAttempts bounds the tries of one request that Apple throttles (429) or fails (5xx).
const maxAttempts = 6

// ErrAPIKeyRefused is Apple refusing the request token (401): the key settings are wrong,
// and no retry can help.
var ErrAPIKeyRefused = errors.New("the App Store Server API refused the request token (401): check APPSTORE_KEY_ID, APPSTORE_ISSUER_ID and APPSTORE_PRIVATE_KEY_FILE")

// APIError is any other answer of the API that is not a success; Code is Apple's
// errorCode when it sent one.
type APIError struct {
	Status int
	Code   int64
}

func (e *APIError) Error() string {
	return fmt.Sprintf("the App Store Server API answered %d (errorCode %d)", e.Status, e.Code)
}

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

	mu       sync.Mutex
	token    string
	tokenEnd time.Time
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

// requestToken is the bearer of the API's requests, made again a minute before it runs out.
func (c *API) requestToken() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Clock()
	if c.token != "" && now.Before(c.tokenEnd.Add(-time.Minute)) {
		return c.token, nil
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": c.cfg.IssuerID, "iat": now.Unix(), "exp": now.Add(tokenLifetime).Unix(),
		"aud": "appstoreconnect-v1", "bid": c.adapter.bundleID,
	})
	tok.Header["kid"] = c.cfg.KeyID
	signed, err := tok.SignedString(c.key)
	if err != nil {
		return "", fmt.Errorf("signing the App Store request token: %w", err)
	}
	c.token, c.tokenEnd = signed, now.Add(tokenLifetime)
	return signed, nil
}

// do sends one request and decodes its answer into out. A 429 waits until the moment its
// Retry-After names (UNIX milliseconds), or else backs off, doubling; so does a 5xx. A 401
// ends at once with ErrAPIKeyRefused.
func (c *API) do(ctx context.Context, method, path string, body, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return err
		}
	}
	backoff := time.Second
	for attempt := 1; ; attempt++ {
		status, retryAt, err := c.once(ctx, method, path, payload, out)
		switch {
		case err == nil || status == http.StatusUnauthorized || (status != http.StatusTooManyRequests && status < 500) || attempt == maxAttempts:
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

// once is one attempt: its status, the moment a 429 says to retry at, and its error.
func (c *API) once(ctx context.Context, method, path string, payload []byte, out any) (int, time.Time, error) {
	if err := c.pace.Wait(ctx); err != nil {
		return 0, time.Time{}, err
	}
	token, err := c.requestToken()
	if err != nil {
		return 0, time.Time{}, err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.cfg.BaseURL+path, bytes.NewReader(payload))
	if err != nil {
		return 0, time.Time{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("the App Store Server API: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	switch {
	case err != nil:
		return 0, time.Time{}, fmt.Errorf("the App Store Server API: %w", err)
	case resp.StatusCode == http.StatusOK:
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, time.Time{}, fmt.Errorf("the App Store Server API's answer: %s", billing.JSONProblem(err))
		}
		return resp.StatusCode, time.Time{}, nil
	case resp.StatusCode == http.StatusUnauthorized:
		return resp.StatusCode, time.Time{}, ErrAPIKeyRefused
	}
	var apple struct {
		ErrorCode int64 `json:"errorCode"`
	}
	json.Unmarshal(raw, &apple)
	var retryAt time.Time
	if ms, err := strconv.ParseInt(resp.Header.Get("Retry-After"), 10, 64); err == nil && ms > 0 {
		retryAt = time.UnixMilli(ms)
	}
	return resp.StatusCode, retryAt, &APIError{Status: resp.StatusCode, Code: apple.ErrorCode}
}
