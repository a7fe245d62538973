package app

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/db"
)

// openDB opens DATABASE_URL and, when asked, migrates it.
func openDB(ctx context.Context, e env, migrate bool) (*db.DB, error) {
	d, err := db.Open(ctx, e.cfg.DatabaseURL, e.cfg.DBTimeout)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*db.DB, error) {
		d.Close()
		return nil, err
	}
	syncEngine := e.cfg.WebIngestion == config.IngestSyncEngine
	if syncEngine {
		if err := billing.CheckMirror(ctx, d, e.cfg.SyncEngineSchema); err != nil {
			return fail(err)
		}
	}
	if migrate {
		applied, err := d.Migrate(ctx)
		if err != nil {
			return fail(err)
		}
		for _, m := range applied {
			e.log.Info("migration applied", "file", m)
		}
		if syncEngine {
			if err := billing.EnsureMirrorIndexes(ctx, d, e.cfg.SyncEngineSchema); err != nil {
				return fail(err)
			}
		}
	}
	return d, nil
}

// withUser runs fn for the command's USER_ID (its first argument, a UUID) over the
// billing of DATABASE_URL.
func withUser(ctx context.Context, e env, fn func(userID string, b *billing.Service) error) error {
	userID := e.args[0]
	if _, err := uuid.Parse(userID); err != nil {
		return fmt.Errorf("USER_ID: want the identity user's UUID, got %q", userID)
	}
	d, err := openDB(ctx, e, false)
	if err != nil {
		return err
	}
	defer d.Close()
	return fn(userID, newBilling(d, e, nil))
}
