package web

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/alexedwards/scs/v2"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/identity"
)

// Session keys. Values are plain strings and numbers so scs's gob encoding needs no
// registration. Tokens live here, server-side, never in the cookie.
const (
	keyAccessToken  = "access_token"
	keyRefreshToken = "refresh_token"
	keyExpiresAt    = "expires_at"
	keyPKCEVerifier = "pkce_verifier" // of the flow in progress
	keyPKCEPurpose  = "pkce_purpose"  // oauth, signup, recovery or magiclink
	keyPKCEStarted  = "pkce_started"  // unix seconds
	keyReturnTo     = "return_to"
	keyAlert        = "alert"
	keyNotice       = "notice"
	keyInfo         = "info" // neither a success nor a failure: what happened, and what to do next
)

// refreshWindow: an access token this close to expiry is refreshed before use.
const refreshWindow = 60 * time.Second

// sessionStore keeps scs sessions in tollgate's own database, on either engine.
type sessionStore struct {
	db *db.DB
}

// The store's calls are a request's database work: each has DB_TIMEOUT, and a failure is
// reported to the database's outage log (and answered by sessionFailed).
func (s sessionStore) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	ctx, cancel := s.db.Bound(ctx)
	defer cancel()
	data, err := dbq.New(s.db).FindWebSession(ctx, dbq.FindWebSessionParams{Token: token, Now: time.Now().UTC()})
	if errors.Is(err, sql.ErrNoRows) {
		s.db.Answered()
		return nil, false, nil
	}
	return data, err == nil, s.db.Report(ctx, err)
}

func (s sessionStore) CommitCtx(ctx context.Context, token string, data []byte, expiry time.Time) error {
	ctx, cancel := s.db.Bound(ctx)
	defer cancel()
	return s.db.Report(ctx, dbq.New(s.db).UpsertWebSession(ctx, dbq.UpsertWebSessionParams{Token: token, Data: data, Expiry: expiry.UTC()}))
}

func (s sessionStore) DeleteCtx(ctx context.Context, token string) error {
	ctx, cancel := s.db.Bound(ctx)
	defer cancel()
	return s.db.Report(ctx, dbq.New(s.db).DeleteWebSession(ctx, token))
}

// The context-free methods are never called (scs prefers the Ctx ones) but complete the interface.
func (s sessionStore) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}
func (s sessionStore) Commit(token string, b []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, b, expiry)
}
func (s sessionStore) Delete(token string) error { return s.DeleteCtx(context.Background(), token) }

// newSessionManager configures the cookie: only a random id, HttpOnly, SameSite=Lax,
// Path=/. Outside development it is Secure with the __Host- prefix; browsers refuse
// __Host- cookies without Secure, which plain-http development cannot set.
func newSessionManager(d *db.DB, secure bool) *scs.SessionManager {
	sm := scs.New()
	sm.Store = sessionStore{db: d}
	sm.Lifetime = 30 * 24 * time.Hour
	sm.IdleTimeout = 7 * 24 * time.Hour
	sm.Cookie.Name = "tollgate_session"
	if secure {
		sm.Cookie.Name = "__Host-tollgate_session"
	}
	sm.Cookie.HttpOnly = true
	sm.Cookie.Secure = secure
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Path = "/"
	sm.Cookie.Persist = true
	return sm
}

// refresher makes refreshes single-flight per refresh token. Refresh tokens are single use
// and a second use revokes the whole family, so concurrent requests of one session must
// share one refresh; late arrivals still holding the old token get the same result.
type refresher struct {
	client *identity.Client
	mu     sync.Mutex
	calls  map[string]*refreshCall
}

type refreshCall struct {
	done    chan struct{}
	session identity.Session
	err     error
}

// remember is how long a refresh's result stays available to late arrivals.
const remember = time.Minute

func (r *refresher) refresh(ctx context.Context, refreshToken string) (identity.Session, error) {
	r.mu.Lock()
	call, ok := r.calls[refreshToken]
	if !ok {
		call = &refreshCall{done: make(chan struct{})}
		r.calls[refreshToken] = call
		go func() {
			// Detached from the request: a client that gives up must not waste the token.
			callCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			call.session, call.err = r.client.Refresh(callCtx, refreshToken)
			close(call.done)
			time.AfterFunc(remember, func() {
				r.mu.Lock()
				delete(r.calls, refreshToken)
				r.mu.Unlock()
			})
		}()
	}
	r.mu.Unlock()
	select {
	case <-call.done:
		return call.session, call.err
	case <-ctx.Done():
		return identity.Session{}, ctx.Err()
	}
}

// safeRedirect returns target if it is a path on this site, else "/". It is the one
// validator every redirect target passes: no scheme, no host, no protocol-relative //,
// no /\ (which browsers read as //), no control characters.
func safeRedirect(target string) string {
	switch {
	case target == "", !strings.HasPrefix(target, "/"), strings.HasPrefix(target, "//"), strings.HasPrefix(target, "/\\"):
		return "/"
	}
	for _, c := range target {
		if c < 0x20 || c == 0x7f || c == '\\' {
			return "/"
		}
	}
	return target
}

// RunSessionCleanup deletes expired sessions every interval until ctx ends; scs's own
// stores clean up after themselves, and ours must too.
func (w *Web) RunSessionCleanup(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if err := dbq.New(w.opts.DB).DeleteExpiredWebSessions(ctx, time.Now().UTC()); err != nil && ctx.Err() == nil {
				w.opts.Log.Warn("expired sessions not deleted", "error", err)
			}
		}
	}
}
