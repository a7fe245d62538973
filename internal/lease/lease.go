// Package lease is a job that one process runs at a time, across every instance on one
// database: a row of reconcile_leases, taken while free or run out, renewed by its
// holder, released when done. A holder that dies leaves a lease that runs out by itself.
package lease

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Lease is one process's hold, or want, of the job key.
type Lease struct {
	db     *db.DB
	key    string
	holder string
	// holdFor is how long a take holds without renewal; busy is what Take returns while
	// another process holds it.
	holdFor time.Duration
	busy    error
	now     func() time.Time
	log     *slog.Logger
}

// New is this process's lease of the job key on d, held holdFor from each Take, which
// answers busy while another process holds it.
func New(d *db.DB, key string, holdFor time.Duration, busy error, clock func() time.Time, log *slog.Logger) *Lease {
	var id [8]byte
	rand.Read(id[:])
	return &Lease{db: d, key: key, holder: hex.EncodeToString(id[:]), holdFor: holdFor, busy: busy,
		now: func() time.Time { return clock().UTC() }, log: log}
}

// Take takes or renews the lease; busy when another process holds it.
func (l *Lease) Take(ctx context.Context) error {
	_, err := dbq.New(l.db).TakeReconcileLease(ctx, dbq.TakeReconcileLeaseParams{
		Provider: l.key, Holder: l.holder, LeaseUntil: l.now().Add(l.holdFor), Now: l.now(),
	})
	if errors.Is(err, sql.ErrNoRows) {
		return l.busy
	}
	return err
}

// Release lets the next holder, of any process, take the lease at once.
func (l *Lease) Release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := dbq.New(l.db).ReleaseReconcileLease(ctx, dbq.ReleaseReconcileLeaseParams{Provider: l.key, Holder: l.holder}); err != nil {
		l.log.Warn("lease not released; it runs out by itself", "lease", l.key, "error", err)
	}
}
