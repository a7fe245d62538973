// Package knownusers records the users tollgate sees signed in — the id and e-mail of a
// verified token's claims — so that operators can find a customer by e-mail. Each session
// is recorded at most once per process: a sign-in through the forms, or the first API
// request of a token's session.
package knownusers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// remembered bounds the sessions kept in memory; past it the set starts afresh, and a
// session seen again is recorded again (an upsert, so only a write).
const remembered = 50_000

// Recorder records users. A nil *Recorder records nothing.
type Recorder struct {
	db       *db.DB
	log      *slog.Logger
	mu       sync.Mutex
	sessions map[string]struct{}
}

// New builds a Recorder on d.
func New(d *db.DB, log *slog.Logger) *Recorder {
	return &Recorder{db: d, log: log, sessions: map[string]struct{}{}}
}

// Saw records that a verified token of session (its session id claim) named userID, with
// email, unless this session was recorded already; a token without a session id counts
// its user as the session. A failure to record is logged and never fails the request.
func (r *Recorder) Saw(ctx context.Context, session, userID, email string) {
	if r == nil || userID == "" || email == "" {
		return
	}
	if session == "" {
		session = "user:" + userID
	}
	r.mu.Lock()
	_, seen := r.sessions[session]
	if !seen {
		if len(r.sessions) >= remembered {
			clear(r.sessions)
		}
		r.sessions[session] = struct{}{}
	}
	r.mu.Unlock()
	if seen {
		return
	}
	if !r.SignedIn(ctx, userID, email) {
		r.forget(session)
	}
}

// SignedIn records a sign-in of userID with email (a new session), and says whether it
// was recorded.
func (r *Recorder) SignedIn(ctx context.Context, userID, email string) bool {
	if r == nil || userID == "" || email == "" {
		return false
	}
	ctx, cancel := r.db.Bound(ctx)
	defer cancel()
	err := dbq.New(r.db).UpsertKnownUser(ctx, dbq.UpsertKnownUserParams{UserID: userID, Email: email, Now: time.Now().UTC()})
	if err != nil {
		r.log.WarnContext(ctx, "signed-in user not recorded", "user_id", userID, "error", err)
	}
	return err == nil
}

// forget lets a session whose record failed be recorded on its next request.
func (r *Recorder) forget(session string) {
	r.mu.Lock()
	delete(r.sessions, session)
	r.mu.Unlock()
}
