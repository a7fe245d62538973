// Package knownusers records the users tollgate sees signed in — the id and e-mail of a
// verified token's claims — so that operators can find a customer by e-mail. Each session
// is recorded at most once per process: a sign-in through the forms, or the first API
// request of a token's session.
//
// Recording is off the request path: a request only notes the user in memory and goes on;
// one writer per process stores what was noted, each write bounded by DB_TIMEOUT. A
// request is never failed or delayed by it, even with the database stuck.
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

// maxPending bounds the users waiting to be written. Past it a new user is not noted; its
// session is forgotten, so that its next request notes it again.
const maxPending = 10_000

// Recorder records users. A nil *Recorder records nothing.
type Recorder struct {
	db  *db.DB
	log *slog.Logger

	mu       sync.Mutex
	sessions map[string]struct{}
	// pending are the users noted and not yet written, by user id: several sessions of a
	// user coalesce into one write of the latest e-mail.
	pending map[string]pendingUser
	writing bool          // the writer is running
	idle    chan struct{} // closed when the writer stops; nil while none has run
}

// pendingUser is a user waiting to be written: the e-mail to write, and the sessions that
// noted it, forgotten if the write fails so that their next request notes it again.
type pendingUser struct {
	email    string
	sessions []string
}

// New builds a Recorder on d.
func New(d *db.DB, log *slog.Logger) *Recorder {
	return &Recorder{db: d, log: log, sessions: map[string]struct{}{}, pending: map[string]pendingUser{}}
}

// Saw notes that a verified token of session (its session id claim) named userID, with
// email, unless this session was noted already; a token without a session id counts its
// user as the session. It returns at once: the write happens off the request path.
func (r *Recorder) Saw(session, userID, email string) {
	if r == nil || userID == "" || email == "" {
		return
	}
	if session == "" {
		session = "user:" + userID
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.sessions[session]; seen {
		return
	}
	if len(r.sessions) >= remembered {
		clear(r.sessions)
	}
	if r.note(userID, email, session) {
		r.sessions[session] = struct{}{}
	}
}

// SignedIn notes a sign-in of userID with email (a new session), always written.
func (r *Recorder) SignedIn(userID, email string) {
	if r == nil || userID == "" || email == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note(userID, email, "")
}

// note adds the user to what the writer writes, starting it if it is not running, and
// says whether it was noted (the pending set has room). r.mu is held.
func (r *Recorder) note(userID, email, session string) bool {
	p, ok := r.pending[userID]
	if !ok && len(r.pending) >= maxPending {
		return false
	}
	p.email = email
	if session != "" {
		p.sessions = append(p.sessions, session)
	}
	r.pending[userID] = p
	if !r.writing {
		r.writing, r.idle = true, make(chan struct{})
		go r.write(r.idle)
	}
	return true
}

// write stores what is pending until nothing is, then stops (closing idle); the next note
// starts it again.
func (r *Recorder) write(idle chan struct{}) {
	defer close(idle)
	for {
		r.mu.Lock()
		batch := r.pending
		if len(batch) == 0 {
			r.writing = false
			r.mu.Unlock()
			return
		}
		r.pending = map[string]pendingUser{}
		r.mu.Unlock()
		r.writeBatch(batch)
	}
}

// writeBatch writes each user of batch, each within DB_TIMEOUT. After a failure it writes
// no more of the batch — a stuck database would hold each for DB_TIMEOUT — and forgets
// their sessions, so that their next requests note them again.
func (r *Recorder) writeBatch(batch map[string]pendingUser) {
	var failed error
	for userID, p := range batch {
		if failed == nil {
			ctx, cancel := r.db.Bound(context.Background())
			failed = dbq.New(r.db).UpsertKnownUser(ctx, dbq.UpsertKnownUserParams{UserID: userID, Email: p.email, Now: time.Now().UTC()})
			cancel()
			if failed != nil {
				r.log.Warn("signed-in users not recorded; their next requests try again", "user_id", userID, "error", failed)
			}
		}
		if failed != nil {
			r.forget(p.sessions)
		}
	}
}

// forget lets sessions whose record failed be noted on their next request.
func (r *Recorder) forget(sessions []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range sessions {
		delete(r.sessions, s)
	}
}

// Flush waits until what was noted before it is written (or failed), or ctx ends.
func (r *Recorder) Flush(ctx context.Context) error {
	if r == nil {
		return nil
	}
	for {
		r.mu.Lock()
		idle, writing := r.idle, r.writing
		r.mu.Unlock()
		if !writing {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
