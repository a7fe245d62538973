// Package audit is the record of every action that changes billing state by hand, whoever
// takes it: an operator in the console, a command, a backend with a service key. Each
// record says when, who, what, on what (and the user it concerns, where known), and how
// it went. Records are only ever added: tollgate never updates or deletes one.
package audit

import (
	"context"
	"database/sql"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Entry is one record.
type Entry struct {
	At time.Time
	// Actor is who acted: an operator's e-mail, "cli:<OS user>" for a command, or
	// "key:<name>" for a service key.
	Actor string
	// Action names what was done ("replay", "plans sync", "keys create", …), Target what
	// it was done to, and Result how it went.
	Action, Target, Result string
	// UserID is the user the action concerns; "" when it concerns none in particular.
	UserID string
}

// CLI is the actor of a command run by the OS user user ("" when unknown).
func CLI(user string) string {
	if user == "" {
		return "cli"
	}
	return "cli:" + user
}

// Record adds e to the log.
func Record(ctx context.Context, d *db.DB, e Entry) error {
	return dbq.New(d).InsertAudit(ctx, dbq.InsertAuditParams{
		Actor: e.Actor, Action: e.Action, Target: e.Target, Result: e.Result,
		UserID: sql.NullString{String: e.UserID, Valid: e.UserID != ""}, Now: e.At.UTC(),
	})
}

// Filter selects records: from Since up to Until (zero: no end), and, where set, of one
// user, actor or action.
type Filter struct {
	Since, Until          time.Time
	UserID, Actor, Action string
	// Max is how many at most, newest first (default 100), after skipping Skip.
	Max, Skip int
}

// List is the records f selects, newest first.
func List(ctx context.Context, d *db.DB, f Filter) ([]Entry, error) {
	if f.Max <= 0 {
		f.Max = 100
	}
	if f.Until.IsZero() {
		f.Until = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	rows, err := dbq.New(d).ListAudit(ctx, dbq.ListAuditParams{
		Since: f.Since.UTC(), Until: f.Until.UTC(), UserID: sql.NullString{String: f.UserID, Valid: true}, Actor: f.Actor, Action: f.Action,
		Max: int32(f.Max), Skip: int32(f.Skip),
	})
	if err != nil {
		return nil, err
	}
	list := make([]Entry, len(rows))
	for i, r := range rows {
		list[i] = Entry{At: r.CreatedAt.UTC(), Actor: r.Actor, Action: r.Action, Target: r.Target, Result: r.Result, UserID: r.UserID.String}
	}
	return list, nil
}
