// Package devidentity emulates the identity service (the GoTrue API of Supabase Auth): the
// part of it tollgate's forms and API use, with its paths, request and response shapes,
// error codes (both error formats), ES256 access tokens with a key set, refresh rotation
// with reuse detection, e-mails that follow Supabase Auth's default templates, PKCE flow
// state with its expiry, and the OAuth round trip.
//
// One Emulator serves two uses. Service is the development identity service tollgate
// serves under /_dev/auth when APP_ENV=development and AUTH_URL is unset, so that a fresh
// clone can sign up, sign in and call /api/v1 without an account anywhere: its users and
// key live in tollgate's database, it confirms sign-ups at once, and it prints e-mails to
// the log. The tests' identity service (identitytest) wraps an Emulator over a MemoryStore
// and adds outages, injected errors and captured e-mails.
//
// Where it imitates a behaviour of Supabase Auth (github.com/supabase/auth), the comment
// names the upstream file it comes from.
package devidentity

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Settings are the behaviours an emulator is configured with, as a Supabase Auth project
// is. Tests may change them between requests.
type Settings struct {
	// Autoconfirm: sign-ups get a session at once (no confirmation e-mail).
	Autoconfirm bool
	// CodesInEmails: the e-mail templates include {{ .Token }}. Supabase Auth's default
	// templates carry only {{ .ConfirmationURL }} (mailer/templatemailer/templatemailer.go).
	CodesInEmails bool
	// Phone: sign-in by SMS code is enabled.
	Phone bool
	// OAuthProviders are the enabled providers (github, google …).
	OAuthProviders []string
	// DenyOAuth: the user turns the OAuth provider's consent down, which Supabase Auth
	// passes on as error=access_denied without an error_code (api/external.go).
	DenyOAuth bool
	// SiteURL is where links go when a call names no redirect_to, or one outside
	// RedirectOrigins (utilities/request.go).
	SiteURL string
	// RedirectOrigins, when set, are the origins redirect_to may lead to.
	RedirectOrigins []string
	// FlowStateExpiry is the PKCE flow state's lifetime (conf: 300 s at least).
	FlowStateExpiry time.Duration
	// TokenTTL is the access tokens' lifetime.
	TokenTTL time.Duration
	// PasswordIterations is PBKDF2's cost for stored passwords.
	PasswordIterations int
}

// Email is a message the emulator sent: its kind (signup, recovery, magiclink), the link
// ({{ .ConfirmationURL }}) and, only when CodesInEmails, the code ({{ .Token }}).
type Email struct {
	To, Type, Link, Code string
}

// Config builds an Emulator.
type Config struct {
	// Base is the URL the emulator is reached at, such as http://localhost:8080/_dev/auth:
	// its tokens' issuer and its links' start. Handler serves under Base's path.
	Base  string
	Store Store
	Key   *ecdsa.PrivateKey
	KeyID string
	// Mailer "sends" an e-mail. The code is in Email.Code only when CodesInEmails; Mailer
	// is also given it apart, for the development service's log.
	Mailer func(ctx context.Context, e Email, code string)
	// Texter "sends" an SMS code (only with Settings.Phone).
	Texter func(ctx context.Context, phone, code string)
	// AccessTokenHook, when set, customises each access token's claims as Supabase Auth's
	// Custom Access Token hook does: given the user and the claims, it answers the claims
	// the token carries.
	AccessTokenHook AccessTokenHook
	Log             *slog.Logger
	Settings
}

// AccessTokenHook answers the claims of a user's access token, given those the service
// would issue.
type AccessTokenHook func(ctx context.Context, userID string, claims json.RawMessage) (json.RawMessage, error)

// Emulator is the emulated identity service.
type Emulator struct {
	Settings
	base, path string
	store      Store
	key        *ecdsa.PrivateKey
	kid        string
	mailer     func(ctx context.Context, e Email, code string)
	texter     func(ctx context.Context, phone, code string)
	hook       AccessTokenHook
	log        *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session // by session id, this process's only
	refresh  map[string]*refresh // by refresh token
	pending  map[string]*pending // e-mailed and texted secrets, by user id
	flows    []*flow
}

// NewEmulator builds an emulator over a store and a signing key.
func NewEmulator(c Config) (*Emulator, error) {
	u, err := url.Parse(c.Base)
	if err != nil || u.Host == "" || u.Path == "" || u.Path == "/" {
		return nil, fmt.Errorf("identity emulator: want a base URL with a path, got %q", c.Base)
	}
	if c.Store == nil || c.Key == nil || c.Mailer == nil || c.Log == nil {
		return nil, errors.New("identity emulator: a store, a key, a mailer and a log are required")
	}
	if c.Texter == nil {
		c.Texter = func(context.Context, string, string) {}
	}
	if c.FlowStateExpiry <= 0 {
		c.FlowStateExpiry = 300 * time.Second
	}
	if c.TokenTTL <= 0 {
		c.TokenTTL = time.Hour
	}
	if c.PasswordIterations <= 0 {
		c.PasswordIterations = 100_000
	}
	return &Emulator{
		Settings: c.Settings, base: strings.TrimRight(c.Base, "/"), path: strings.TrimRight(u.Path, "/"),
		store: c.Store, key: c.Key, kid: c.KeyID, mailer: c.Mailer, texter: c.Texter, hook: c.AccessTokenHook, log: c.Log,
		sessions: map[string]*session{}, refresh: map[string]*refresh{}, pending: map[string]*pending{},
	}, nil
}

// Issuer is the iss claim of the tokens the emulator mints.
func (e *Emulator) Issuer() string { return e.base }

// Token is a user's bearer token.
type Token struct {
	UserID, Email, AccessToken string
	ExpiresAt                  time.Time
}

// Mint returns an access token for email, creating a confirmed user (without a password:
// they sign in with a one-time code or a reset) if there is none.
func (e *Emulator) Mint(ctx context.Context, email string) (Token, error) {
	email, err := normaliseEmail(email)
	if err != nil {
		return Token{}, err
	}
	u, err := e.store.UserByEmail(ctx, email)
	if errors.Is(err, ErrNoUser) {
		u, err = e.addUser(ctx, User{Email: email, Confirmed: true})
	}
	if err != nil {
		return Token{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.newSession(u)
	return Token{UserID: u.ID, Email: u.Email, AccessToken: s["access_token"].(string), ExpiresAt: time.Unix(s["expires_at"].(int64), 0)}, nil
}

// AddUser creates a confirmed user who signs in with password.
func (e *Emulator) AddUser(ctx context.Context, email, password string) (string, error) {
	if normal, err := normaliseEmail(email); err == nil {
		email = normal
	}
	u, err := e.addUser(ctx, User{Email: email, PasswordHash: e.hashPassword(password), Confirmed: true})
	return u.ID, err
}

// addUser stores a new user of the e-mail provider unless u names another.
func (e *Emulator) addUser(ctx context.Context, u User) (User, error) {
	u.ID, u.CreatedAt = newUUID(), time.Now().UTC()
	if u.Provider == "" {
		u.Provider = "email"
	}
	if u.Metadata == nil {
		u.Metadata = map[string]any{}
	}
	if err := e.store.AddUser(ctx, u); err != nil {
		return User{}, err
	}
	e.log.InfoContext(ctx, "identity service: user created", "email", u.Email, "user_id", u.ID)
	return u, nil
}

// redirectTarget is where a link may send the browser: redirect_to when it is allowed,
// else the site URL, as Supabase Auth falls back for addresses outside its allow list.
func (e *Emulator) redirectTarget(redirectTo string) string {
	if redirectTo == "" {
		return e.SiteURL
	}
	if len(e.RedirectOrigins) == 0 {
		return redirectTo
	}
	for _, origin := range e.RedirectOrigins {
		if redirectTo == origin || strings.HasPrefix(redirectTo, origin+"/") {
			return redirectTo
		}
	}
	return e.SiteURL
}
