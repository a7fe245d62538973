// Package grants is where grants are made, read and ended, for every surface (the
// service API, the commands, the console): it checks a request, records each step of a
// grant's life as an event the pipeline applies (package grant), and notes each grant
// and revocation in the audit log. Its sweep records the ends of grants whose time has
// come, on every instance at once: a step's event id is the same wherever it is
// recorded, so each end is applied, and announced, once.
package grants

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tollgate/tollgate/internal/audit"
	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/grant"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Grants makes, lists and ends grants.
type Grants struct {
	db       *db.DB
	pipeline *pipeline.Pipeline
	log      *slog.Logger
	clock    func() time.Time
	// added wakes the sweep when this instance adds a grant that may end before it looks.
	added chan struct{}
}

// New is the grants of d, applied through p (built with the grant adapter). clock is
// time.Now unless a test sets it.
func New(d *db.DB, p *pipeline.Pipeline, log *slog.Logger, clock func() time.Time) *Grants {
	if clock == nil {
		clock = time.Now
	}
	return &Grants{db: d, pipeline: p, log: log, clock: clock, added: make(chan struct{}, 1)}
}

// now is the time to the microsecond, as finely as Postgres keeps it: a grant's end is
// stored as its subscription's period end and compared with it.
func (g *Grants) now() time.Time { return g.clock().UTC().Truncate(time.Microsecond) }

// Request asks for a grant: one plan (by its key) to one user, until Until or for For
// (exactly one of them), for a reason, on the word of By (an operator's e-mail,
// "key:<name>" or "cli:<OS user>").
type Request struct {
	UserID, Plan string
	Until        time.Time
	For          time.Duration
	Reason, By   string
}

// Add grants what r asks and gives the grant made. A plan that does not exist, an end
// not in the future or more than billing.MaxDuration away, no end or two, no reason, or
// a plan or reason holding a NUL character is a billing.KindInvalid error and nothing is
// made.
func (g *Grants) Add(ctx context.Context, r Request) (billing.Grant, error) {
	now := g.now()
	end, err := r.check(ctx, dbq.New(g.db), now)
	if err != nil {
		return billing.Grant{}, err
	}
	made := billing.Grant{
		ID: uuid.NewString(), UserID: strings.ToLower(r.UserID), Plan: r.Plan, Starts: now, Ends: end,
		Reason: strings.TrimSpace(r.Reason), By: r.By,
	}
	_, err = g.record(ctx, grant.EventGranted, made, now)
	g.audit(ctx, made.By, "grant", made, made.Reason, err)
	if err != nil {
		return billing.Grant{}, err
	}
	select {
	case g.added <- struct{}{}:
	default:
	}
	return made, nil
}

// check is the end r asks for, or why r cannot be granted.
func (r Request) check(ctx context.Context, q *dbq.Queries, now time.Time) (time.Time, error) {
	switch {
	case !billing.IsUUID(r.UserID):
		return time.Time{}, billing.ErrGrantUser
	case strings.ContainsRune(r.Plan, 0) || strings.ContainsRune(r.Reason, 0): // no database stores it
		return time.Time{}, billing.ErrGrantText
	case r.For < 0 || r.For > billing.MaxDuration:
		return time.Time{}, billing.ErrGrantDuration
	case strings.TrimSpace(r.Reason) == "":
		return time.Time{}, billing.ErrGrantReason
	case r.Until.IsZero() == (r.For == 0):
		return time.Time{}, billing.ErrGrantLength
	}
	end := r.Until
	if r.For != 0 {
		end = now.Add(r.For)
	}
	end = end.UTC().Truncate(time.Microsecond)
	switch {
	case !end.After(now):
		return time.Time{}, billing.ErrGrantEnd
	case end.Sub(now) > billing.MaxDuration:
		return time.Time{}, billing.ErrGrantDuration
	}
	n, err := q.LivePlanExists(ctx, r.Plan)
	if err != nil {
		return time.Time{}, err
	}
	if n == 0 {
		return time.Time{}, billing.ErrGrantPlan
	}
	return end, nil
}

// Revoke ends the grant id at once, for reason, on the word of by, and gives it as it
// now stands. With userID set, a grant of another user is billing.ErrNoGrant. A grant
// already ended or revoked is billing.ErrGrantEnded and changes nothing.
func (g *Grants) Revoke(ctx context.Context, userID, id, reason, by string) (billing.Grant, error) {
	switch {
	case strings.ContainsRune(reason, 0):
		return billing.Grant{}, billing.ErrGrantText
	case strings.TrimSpace(reason) == "":
		return billing.Grant{}, billing.ErrGrantReason
	}
	current, err := g.Get(ctx, userID, id)
	if err != nil {
		return billing.Grant{}, err
	}
	now := g.now()
	if !current.Live(now) || current.Ended() {
		return billing.Grant{}, billing.ErrGrantEnded
	}
	current.RevokedBy, current.RevokeReason = by, strings.TrimSpace(reason)
	outcome, err := g.record(ctx, grant.EventRevoked, current, now)
	if err == nil && outcome == billing.OutcomeDuplicate {
		err = billing.ErrGrantEnded // revoked by another at the same moment: theirs stands
	}
	g.audit(ctx, by, "revoke", current, current.RevokeReason, err)
	if err != nil {
		return billing.Grant{}, err
	}
	current.Revoked = &now // as the applied revocation stored it
	return current, nil
}

// Get is the grant id; with userID set, only if it is that user's.
func (g *Grants) Get(ctx context.Context, userID, id string) (billing.Grant, error) {
	state, err := dbq.New(g.db).GetGrant(ctx, id)
	if errors.Is(err, sql.ErrNoRows) {
		return billing.Grant{}, billing.ErrNoGrant
	}
	if err != nil {
		return billing.Grant{}, err
	}
	got, err := billing.StoredState[billing.Grant](billing.Stored{State: state})
	if err != nil {
		return billing.Grant{}, err
	}
	if userID != "" && !strings.EqualFold(got.UserID, userID) {
		return billing.Grant{}, billing.ErrNoGrant
	}
	return got, nil
}

// maxListed bounds a list: a user has few grants, and a list of everyone's is for a look.
const maxListed = 500

// List is the grants of userID ("" for everyone's), newest first.
func (g *Grants) List(ctx context.Context, userID string) ([]billing.Grant, error) {
	states, err := dbq.New(g.db).ListGrants(ctx, dbq.ListGrantsParams{UserID: strings.ToLower(userID), Max: maxListed})
	if err != nil {
		return nil, err
	}
	list := make([]billing.Grant, 0, len(states))
	for _, state := range states {
		got, err := billing.StoredState[billing.Grant](billing.Stored{State: state})
		if err != nil {
			return nil, err
		}
		list = append(list, got)
	}
	return list, nil
}

// record has the pipeline apply the step typ of gr at at, and says whether it was
// applied or already had been (a duplicate). An outcome that applied nothing (the grant's
// plan went from the plans file meanwhile) is an error.
func (g *Grants) record(ctx context.Context, typ string, gr billing.Grant, at time.Time) (string, error) {
	ev, body, err := grant.Event(typ, gr, at)
	if err != nil {
		return "", err
	}
	done, err := g.pipeline.Ingest(ctx, billing.ProviderGrant, ev, body)
	if err != nil {
		return "", err
	}
	switch done.Outcome {
	case billing.OutcomeApplied, billing.OutcomeDuplicate:
		return done.Outcome, nil
	}
	return "", fmt.Errorf("grant %s: %s: %s", gr.ID, done.Outcome, done.Reason)
}

// audit notes a grant or revocation in the audit log. A failure to note it is logged: the
// step it notes is already applied.
func (g *Grants) audit(ctx context.Context, by, action string, gr billing.Grant, reason string, err error) {
	result := "ok"
	if err != nil {
		result = "failed"
	}
	target := fmt.Sprintf("grant %s: %s until %s: %s", gr.ID, gr.Plan, gr.Ends.Format(time.RFC3339), reason)
	e := audit.Entry{At: g.now(), Actor: by, Action: action, Target: target, Result: result, UserID: gr.UserID}
	if err := audit.Record(ctx, g.db, e); err != nil {
		g.log.ErrorContext(ctx, "the audit log could not record an action", "action", action, "grant_id", gr.ID, "error", err)
	}
}
