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

// Hold takes the lease (busy when another process holds it) and keeps it, renewing it
// every third of its hold, until release is called: a wait of any length — a store's
// Retry-After, a slow page — never lets it run out while this process lives. The returned
// context ends when release is called or a renewal finds the lease taken by another
// process (held past its end, unrenewed, as a database outage can make it), so that the
// work under it stops.
func (l *Lease) Hold(ctx context.Context) (held context.Context, release func(), err error) {
	if err := l.Take(ctx); err != nil {
		return nil, nil, err
	}
	held, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(l.holdFor / 3)
		defer tick.Stop()
		for {
			select {
			case <-held.Done():
				return
			case <-tick.C:
			}
			err := l.Take(held)
			switch {
			case errors.Is(err, l.busy):
				l.log.Warn("lease lost to another process; the work under it stops", "lease", l.key)
				cancel()
				return
			case err != nil && held.Err() == nil:
				l.log.Debug("lease not renewed; trying again", "lease", l.key, "error", err)
			}
		}
	}()
	return held, func() {
		cancel()
		<-done
		l.Release()
	}, nil
}

// Release lets the next holder, of any process, take the lease at once.
func (l *Lease) Release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := dbq.New(l.db).ReleaseReconcileLease(ctx, dbq.ReleaseReconcileLeaseParams{Provider: l.key, Holder: l.holder}); err != nil {
		l.log.Warn("lease not released; it runs out by itself", "lease", l.key, "error", err)
	}
}
