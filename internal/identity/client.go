// Package identity is a client for the identity service (the Supabase Auth / GoTrue HTTP API).
// It is hand-written because tollgate needs PKCE and typed errors that carry the upstream
// error code. Bodies are JSON; grant_type and redirect_to travel in the query string.
package identity

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// User is the identity service's user, as GET /user returns it.
type User struct {
	ID           string           `json:"id"`
	Email        string           `json:"email"`
	Phone        string           `json:"phone"`
	UserMetadata map[string]any   `json:"user_metadata"`
	AppMetadata  map[string]any   `json:"app_metadata"`
	Identities   []map[string]any `json:"identities"`
	Factors      []map[string]any `json:"factors"`
	CreatedAt    *time.Time       `json:"created_at"`
	LastSignInAt *time.Time       `json:"last_sign_in_at"`
	// EmailConfirmedAt is set once the user has proved they own Email.
	EmailConfirmedAt *time.Time `json:"email_confirmed_at"`
}

// Session is a token response.
type Session struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	ExpiresAt    int64  `json:"expires_at"`
	RefreshToken string `json:"refresh_token"`
	User         User   `json:"user"`
}

// Error kinds as the Supabase client libraries name them (AuthWeakPasswordError, …).
const (
	KindWeakPassword   = "WEAK_PASSWORD"
	KindPKCE           = "PKCE_ERROR"
	KindSessionMissing = "SESSION_MISSING"
)

// Error is a refusal by the identity service: its HTTP status, error code and message.
type Error struct {
	Status  int
	Code    string
	Message string
	// WeakPasswordReasons lists why a password was refused, for weak_password.
	WeakPasswordReasons []string
}

func (e *Error) Error() string {
	return fmt.Sprintf("identity service: %d %s", e.Status, e.Code)
}

// Kind maps the error code to the client-library name forms show the message for, or "".
func (e *Error) Kind() string {
	switch e.Code {
	case "weak_password":
		return KindWeakPassword
	case "bad_code_verifier", "flow_state_not_found", "flow_state_expired":
		return KindPKCE
	case "session_not_found", "no_authorization", "refresh_token_not_found", "refresh_token_already_used":
		return KindSessionMissing
	}
	return ""
}

// ErrUnavailable means the identity service could not be reached or answered something
// that is not its API (5xx, timeout, garbage). Forms show a "temporarily unavailable" page.
var ErrUnavailable = errors.New("identity service unavailable")

// ErrNotConfigured means no identity service is configured (AUTH_URL is unset): no call
// can succeed until it is, and saying "try again" would mislead.
var ErrNotConfigured = errors.New("no identity service configured (AUTH_URL is unset)")

// AsError returns the *Error in err, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Client talks to one identity service.
type Client struct {
	base   string
	apiKey string
	http   *http.Client
}

// New returns a client for baseURL (e.g. https://<ref>.supabase.co/auth/v1).
func New(baseURL, apiKey string, httpClient *http.Client) *Client {
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 10 * time.Second}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), apiKey: apiKey, http: httpClient}
}

// SignInWithPassword exchanges an e-mail and password for a session.
func (c *Client) SignInWithPassword(ctx context.Context, email, password string) (Session, error) {
	var s Session
	err := c.do(ctx, http.MethodPost, "/token", url.Values{"grant_type": {"password"}}, "",
		map[string]any{"email": email, "password": password}, &s)
	return s, err
}

// SignUpResult is a sign-up's outcome: a session when the address needs no confirmation,
// else only the user (an e-mail was sent).
type SignUpResult struct {
	Session *Session
	User    User
}

// SignUp creates a user; data becomes user_metadata. With a PKCE challenge, the
// confirmation link comes back to redirectTo with a code.
func (c *Client) SignUp(ctx context.Context, email, password string, data map[string]any, redirectTo string, pkce PKCE) (SignUpResult, error) {
	var raw json.RawMessage
	body := map[string]any{"email": email, "password": password, "data": data}
	pkce.addTo(body)
	if err := c.do(ctx, http.MethodPost, "/signup", redirectQuery(redirectTo), "", body, &raw); err != nil {
		return SignUpResult{}, err
	}
	var s Session
	if err := json.Unmarshal(raw, &s); err == nil && s.AccessToken != "" {
		return SignUpResult{Session: &s, User: s.User}, nil
	}
	var u User
	if err := json.Unmarshal(raw, &u); err != nil {
		return SignUpResult{}, ErrUnavailable
	}
	return SignUpResult{User: u}, nil
}

// Recover sends a password reset e-mail. The service answers the same for unknown
// addresses.
func (c *Client) Recover(ctx context.Context, email, redirectTo string, pkce PKCE) error {
	body := map[string]any{"email": email}
	pkce.addTo(body)
	return c.do(ctx, http.MethodPost, "/recover", redirectQuery(redirectTo), "", body, nil)
}

// SendOTP sends a one-time code by SMS when phone is set, else an e-mail. The e-mail's
// default template carries only a sign-in link, so the e-mail flow is PKCE: the link comes
// back to redirectTo with a code that only this PKCE's verifier exchanges. A code shows in
// the e-mail only when its template includes {{ .Token }}.
func (c *Client) SendOTP(ctx context.Context, email, phone string, createUser bool, redirectTo string, pkce PKCE) error {
	body := map[string]any{"create_user": createUser}
	if phone != "" {
		body["phone"] = phone
		return c.do(ctx, http.MethodPost, "/otp", nil, "", body, nil)
	}
	body["email"] = email
	pkce.addTo(body)
	return c.do(ctx, http.MethodPost, "/otp", redirectQuery(redirectTo), "", body, nil)
}

// VerifyOTP exchanges a code (types email, sms, phone_change, recovery …) for a session.
func (c *Client) VerifyOTP(ctx context.Context, otpType, email, phone, token string) (Session, error) {
	body := map[string]any{"type": otpType, "token": token}
	if phone != "" {
		body["phone"] = phone
	} else {
		body["email"] = email
	}
	var s Session
	err := c.do(ctx, http.MethodPost, "/verify", nil, "", body, &s)
	return s, err
}

// UpdatePassword sets a new password for the session's user.
func (c *Client) UpdatePassword(ctx context.Context, accessToken, password string) (User, error) {
	var u User
	err := c.do(ctx, http.MethodPut, "/user", nil, accessToken, map[string]any{"password": password}, &u)
	return u, err
}

// GetUser returns the user an access token belongs to.
func (c *Client) GetUser(ctx context.Context, accessToken string) (User, error) {
	var u User
	err := c.do(ctx, http.MethodGet, "/user", nil, accessToken, nil, &u)
	return u, err
}

// Logout ends the token's session.
func (c *Client) Logout(ctx context.Context, accessToken string) error {
	return c.do(ctx, http.MethodPost, "/logout", url.Values{"scope": {"local"}}, accessToken, nil, nil)
}

// Refresh exchanges a refresh token (single use) for a new session.
func (c *Client) Refresh(ctx context.Context, refreshToken string) (Session, error) {
	var s Session
	err := c.do(ctx, http.MethodPost, "/token", url.Values{"grant_type": {"refresh_token"}}, "",
		map[string]any{"refresh_token": refreshToken}, &s)
	return s, err
}

// ExchangeCode completes a PKCE flow (OAuth, e-mail confirmation or recovery link).
func (c *Client) ExchangeCode(ctx context.Context, authCode, codeVerifier string) (Session, error) {
	var s Session
	err := c.do(ctx, http.MethodPost, "/token", url.Values{"grant_type": {"pkce"}}, "",
		map[string]any{"auth_code": authCode, "code_verifier": codeVerifier}, &s)
	return s, err
}

// AuthorizeURL is where the browser goes to sign in with an OAuth provider.
func (c *Client) AuthorizeURL(provider, redirectTo string, pkce PKCE) string {
	q := url.Values{"provider": {provider}, "redirect_to": {redirectTo},
		"code_challenge": {pkce.Challenge}, "code_challenge_method": {"s256"}}
	return c.base + "/authorize?" + q.Encode()
}

// PKCE is a code verifier and its S256 challenge. The verifier stays on the server.
type PKCE struct {
	Verifier  string
	Challenge string
}

// NewPKCE makes a fresh verifier (43 characters of base64url) and its challenge.
func NewPKCE() PKCE {
	var b [32]byte
	rand.Read(b[:])
	verifier := base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(verifier))
	return PKCE{Verifier: verifier, Challenge: base64.RawURLEncoding.EncodeToString(sum[:])}
}

func (p PKCE) addTo(body map[string]any) {
	if p.Challenge != "" {
		body["code_challenge"], body["code_challenge_method"] = p.Challenge, "s256"
	}
}

func redirectQuery(redirectTo string) url.Values {
	if redirectTo == "" {
		return nil
	}
	return url.Values{"redirect_to": {redirectTo}}
}

// do sends one call. Calls are never retried: several of them send mail or SMS.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, bearer string, body, out any) error {
	if c.base == "" {
		return ErrNotConfigured
	}
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var reader io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		reader = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, reader)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.apiKey != "" {
		req.Header.Set("apikey", c.apiKey)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	switch {
	case resp.StatusCode >= 500:
		return fmt.Errorf("%w: status %d", ErrUnavailable, resp.StatusCode)
	case resp.StatusCode >= 400:
		return parseError(resp, raw)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%w: the answer is not JSON", ErrUnavailable)
	}
	return nil
}

// parseError reads both error formats: {"code":<http>,"error_code":"…","msg":"…"} and, with
// the 2024-01-01 API version, {"code":"…","message":"…"}. The code falls back to the
// X-Sb-Error-Code header.
func parseError(resp *http.Response, raw []byte) error {
	var body struct {
		Code         json.RawMessage `json:"code"`
		ErrorCode    string          `json:"error_code"`
		Msg          string          `json:"msg"`
		Message      string          `json:"message"`
		Error        string          `json:"error"`
		ErrorDesc    string          `json:"error_description"`
		WeakPassword *struct {
			Reasons []string `json:"reasons"`
		} `json:"weak_password"`
	}
	if json.Unmarshal(raw, &body) != nil {
		return fmt.Errorf("%w: status %d with a body that is not JSON", ErrUnavailable, resp.StatusCode)
	}
	e := &Error{Status: resp.StatusCode, Code: body.ErrorCode, Message: firstNonEmpty(body.Msg, body.Message, body.ErrorDesc, body.Error)}
	var code string
	if e.Code == "" && json.Unmarshal(body.Code, &code) == nil {
		e.Code = code
	}
	if e.Code == "" {
		e.Code = resp.Header.Get("X-Sb-Error-Code")
	}
	if body.WeakPassword != nil {
		e.WeakPasswordReasons = body.WeakPassword.Reasons
	}
	return e
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
