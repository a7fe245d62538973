// Package devidentity is a development identity service: the part of the GoTrue (Supabase
// Auth) API that tollgate's forms and API use, served by tollgate itself under /_dev/auth
// when APP_ENV=development and AUTH_URL is unset, so that a fresh clone can sign up, sign
// in and call /api/v1 without an account anywhere.
//
// It is not an identity service to deploy. Sign-up is confirmed at once; e-mails are not
// sent but their links and codes printed to the log; and whoever reaches it can obtain a
// valid token for any address. tollgate serves it only while it listens on a loopback
// address, and never outside development.
//
// Users and the signing key live in tollgate's database, so user ids (and the billing
// links made to them) survive a restart, and a token minted by one process ("tollgate dev
// token") verifies in another. Tokens, refresh tokens, e-mailed links and PKCE codes are
// signed JWTs rather than rows: nothing else is stored, and sign-out ends tollgate's
// session, not the tokens already issued, which expire on their own.
package devidentity

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"database/sql"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Lifetimes, as Supabase Auth's defaults where it has one.
const (
	accessTTL  = time.Hour
	refreshTTL = 30 * 24 * time.Hour
	linkTTL    = time.Hour // GOTRUE_MAILER_OTP_EXP
	codeTTL    = 10 * time.Minute
	pkceTTL    = 5 * time.Minute // the flow state's lifetime
)

// Service is the development identity service over one database.
type Service struct {
	db   *db.DB
	base string // the URL it is reached at: the tokens' issuer, and the links' start
	path string // base's path, under which Handler serves
	log  *slog.Logger
	key  *ecdsa.PrivateKey
	kid  string
	now  func() time.Time

	mu sync.Mutex
	// codes are the e-mailed one-time codes by address: the newest wins, each is used once.
	// They live in memory, in the process whose log printed them.
	codes map[string]pendingCode
}

type pendingCode struct {
	code, kind string
	expires    time.Time
}

// New opens the service over d, creating its signing key on first use. base is the URL it
// is reached at, such as http://localhost:8080/_dev/auth: the tokens' issuer. Handler
// serves under base's path, and links may lead back to base's origin only.
func New(ctx context.Context, d *db.DB, base string, log *slog.Logger) (*Service, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || u.Path == "" || u.Path == "/" {
		return nil, fmt.Errorf("development identity service: want a base URL with a path, got %q", base)
	}
	s := &Service{db: d, base: strings.TrimRight(base, "/"), path: strings.TrimRight(u.Path, "/"), log: log, now: time.Now, codes: map[string]pendingCode{}}
	if err := s.loadKey(ctx); err != nil {
		return nil, fmt.Errorf("development identity service: %w", err)
	}
	return s, nil
}

// Issuer is the iss claim of the tokens the service mints.
func (s *Service) Issuer() string { return s.base }

// loadKey reads the signing key, making one if there is none. Two processes starting at
// once may both make one; both then use the oldest.
func (s *Service) loadKey(ctx context.Context) error {
	q := dbq.New(s.db)
	row, err := q.DevIdentityKey(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		if err := s.addKey(ctx, q); err != nil {
			return err
		}
		row, err = q.DevIdentityKey(ctx)
	}
	if err != nil {
		return err
	}
	block, _ := pem.Decode([]byte(row.PrivateKey))
	if block == nil {
		return errors.New("the stored signing key is not PEM")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	key, ok := parsed.(*ecdsa.PrivateKey)
	if err != nil || !ok {
		return errors.New("the stored signing key is not an ECDSA key")
	}
	s.key, s.kid = key, row.Kid
	return nil
}

func (s *Service) addKey(ctx context.Context, q *dbq.Queries) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	encoded := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	return q.AddDevIdentityKey(ctx, dbq.AddDevIdentityKeyParams{Kid: "dev-" + randomHex(8), PrivateKey: string(encoded), Now: s.now().UTC()})
}

// Client is an HTTP client whose requests to the service are answered in-process, by its
// handler: the forms and the key set reach it without a network, whatever PUBLIC_URL says
// and whether or not the listener is up yet.
func (s *Service) Client() *http.Client {
	return &http.Client{Transport: handlerTransport{s.Handler()}, Timeout: 10 * time.Second}
}

// Token is a user's bearer token, for "tollgate dev token".
type Token struct {
	UserID, Email, AccessToken string
	ExpiresAt                  time.Time
}

// Mint returns an access token for email, creating the user (without a password: sign in
// on the forms with a one-time code or a reset) if there is none.
func (s *Service) Mint(ctx context.Context, email string) (Token, error) {
	email, err := normaliseEmail(email)
	if err != nil {
		return Token{}, err
	}
	u, err := s.userByEmail(ctx, email)
	if errors.Is(err, errNoUser) {
		u, err = s.addUser(ctx, email, "")
	}
	if err != nil {
		return Token{}, err
	}
	access, expires := s.accessToken(u)
	return Token{UserID: u.ID, Email: u.Email, AccessToken: access, ExpiresAt: expires}, nil
}
