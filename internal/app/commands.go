package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/google/uuid"

	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/stores"
)

// openDB opens DATABASE_URL for a command that uses the schema but never changes it: it
// refuses a database that lacks migrations (db.ErrNotMigrated, saying where the database
// is) rather than fail on a missing table or migrate whatever a mistyped URL names, and
// never creates a SQLite file. Only migrate and serve change a schema (openMigrating).
func openDB(ctx context.Context, e env) (*db.DB, error) { return openMigrating(ctx, e, false) }

// openMigrating opens DATABASE_URL and, when migrate, applies the pending migrations,
// creating a SQLite file that is not there yet. Whichever, a database migrated by a newer
// tollgate is refused: this build cannot know what its tables mean now.
func openMigrating(ctx context.Context, e env, migrate bool) (*db.DB, error) {
	where, creating := e.cfg.DatabaseURL, false
	if path := db.SQLitePath(e.cfg.DatabaseURL); path != "" {
		where = "sqlite:" + path
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			if !migrate {
				// Opening would create an empty file, wherever the command happens to run.
				return nil, fmt.Errorf("%w (%s): run tollgate migrate; no such file yet (or set DATABASE_URL)", db.ErrNotMigrated, where)
			}
			if e.devEnvLooked != "" && e.getenv("DATABASE_URL") == "" {
				// Outside the repository the default file would land wherever the command
				// runs (cmd/tollgate, say), apart from the database serve uses.
				return nil, fmt.Errorf("no database at %s and no %s here (%s): run tollgate from the repository root, "+
					"or set DATABASE_URL=sqlite:%[1]s to create one here", path, DevEnvFile, e.devEnvLooked)
			}
			creating = true
		}
	} else {
		where = strings.Replace(db.Describe(where), " ", ":", 1)
	}
	d, err := db.Open(ctx, e.cfg.DatabaseURL, e.cfg.DBTimeout)
	if err != nil {
		return nil, err
	}
	if creating {
		e.log.Info("created the database", "path", strings.TrimPrefix(where, "sqlite:"))
	}
	fail := func(err error) (*db.DB, error) {
		d.Close()
		if newer := (*db.NewerSchema)(nil); errors.As(err, &newer) {
			err = fmt.Errorf("%w (%s; this binary is %s)", err, where, version())
		}
		return nil, err
	}
	if !migrate {
		if err := d.CheckMigrated(ctx); err != nil {
			var missing *db.MissingMigrations
			switch {
			case errors.As(err, &missing):
				return fail(fmt.Errorf("%w (%s): run tollgate migrate (%d of %d migrations missing)", db.ErrNotMigrated, where, missing.Missing, missing.Of))
			case errors.Is(err, db.ErrNotMigrated):
				return fail(fmt.Errorf("%w (%s): run tollgate migrate", err, where))
			}
			return fail(err)
		}
	}
	syncEngine := syncEngineOf(e)
	if syncEngine != nil {
		if err := syncEngine.Check(ctx, d, e.cfg.SyncEngineSchema); err != nil {
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
		if syncEngine != nil {
			if err := syncEngine.EnsureIndexes(ctx, d, e.cfg.SyncEngineSchema); err != nil {
				return fail(err)
			}
		}
	}
	return d, nil
}

// syncEngineOf is the sync engine whose mirror the configuration reads (WEB_INGESTION=
// sync_engine): the first store on that has one. Nil when none is read.
func syncEngineOf(e env) *stores.SyncEngine {
	if e.cfg.WebIngestion != config.IngestSyncEngine {
		return nil
	}
	for _, s := range e.stores {
		if s.SyncEngine != nil && s.On(e.cfg) {
			return s.SyncEngine
		}
	}
	return nil
}

// withUser runs fn for the command's USER_ID (its first argument, a UUID) over the
// billing of DATABASE_URL.
func withUser(ctx context.Context, e env, fn func(userID string, b *billingParts) error) error {
	userID := e.args[0]
	if _, err := uuid.Parse(userID); err != nil {
		return fmt.Errorf("USER_ID: want the identity user's UUID, got %q", userID)
	}
	return withBilling(ctx, e, func(_ *db.DB, b *billingParts) error { return fn(userID, b) })
}

// withBilling runs fn over the database of DATABASE_URL (migrated already, see openDB) and
// billing wired on it as serve wires it, so that what a command writes goes the path a
// webhook's does: ordered, its change recorded for the outbound webhooks.
func withBilling(ctx context.Context, e env, fn func(d *db.DB, b *billingParts) error) error {
	d, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer d.Close()
	b, err := newBilling(d, e, nil)
	if err != nil {
		return err
	}
	return fn(d, b)
}
