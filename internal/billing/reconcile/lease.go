package reconcile

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

// lease is a provider's row of reconcile_leases, held by one process at a time: whoever
// holds it reads that provider's API, so that two instances never pass over it at once.
type lease struct {
	db       *db.DB
	provider string
	holder   string
	now      func() time.Time
	log      *slog.Logger
}

func newLease(d *db.DB, provider string, clock func() time.Time, log *slog.Logger) *lease {
	var id [8]byte
	rand.Read(id[:])
	return &lease{db: d, provider: provider, holder: hex.EncodeToString(id[:]), now: func() time.Time { return clock().UTC() }, log: log}
}

// take takes or renews the lease; ErrBusy when another process holds it.
func (l *lease) take(ctx context.Context) error {
	_, err := dbq.New(l.db).TakeReconcileLease(ctx, dbq.TakeReconcileLeaseParams{
		Provider: l.provider, Holder: l.holder, LeaseUntil: l.now().Add(leaseFor), Now: l.now(),
	})
	if errors.Is(err, sql.ErrNoRows) {
		return ErrBusy
	}
	return err
}

// release lets the next pass, of any process, start at once.
func (l *lease) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := dbq.New(l.db).ReleaseReconcileLease(ctx, dbq.ReleaseReconcileLeaseParams{Provider: l.provider, Holder: l.holder}); err != nil {
		l.log.Warn("reconcile: lease not released; it runs out by itself", "provider", l.provider, "error", err)
	}
}
