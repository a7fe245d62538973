// Package reader answers billing questions: a user's position (their plan, entitlements
// and limits), the view every surface shows, usage counters, and what an operator is shown
// of a user. It keeps answers in memory while they stand (see answerCache) and reads the
// canonical rows otherwise — what /api/v1/me, the service API, the framework, the account
// page and `users show` call.
package reader

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Options configures a Reader.
type Options struct {
	// AnswersMaxAge, above zero, keeps users' answers in memory for at most that long.
	// Not in sync_engine mode, whose mirror is written by another program.
	AnswersMaxAge time.Duration
	// Catalogues is the plan catalogue shared with the pipeline.
	Catalogues *plans.Catalogues
	// Mirror, in sync_engine mode, is where web subscriptions are read from; else nil.
	Mirror plans.Mirror
	Clock  func() time.Time
}

// Reader answers billing questions.
type Reader struct {
	db         *db.DB
	log        *slog.Logger
	now        func() time.Time
	catalogues *plans.Catalogues
	mirror     plans.Mirror
	// answers is nil when users' answers are not kept in memory.
	answers *answerCache
}

// New builds a Reader.
func New(d *db.DB, log *slog.Logger, opts Options) *Reader {
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	r := &Reader{db: d, log: log, now: func() time.Time { return clock().UTC() }, catalogues: opts.Catalogues, mirror: opts.Mirror}
	if r.catalogues == nil {
		r.catalogues = &plans.Catalogues{}
	}
	if r.mirror == nil {
		r.answers = newAnswerCache(opts.AnswersMaxAge)
	}
	return r
}

// Forget drops what is kept of users ("*": everyone), whose rows were just written.
func (s *Reader) Forget(users ...string) { s.answers.forget(users...) }

// Entitlements loads the user's position now. Entitlements combine over every entitling
// subscription (booleans OR, numbers max); with none, the default plan's apply.
func (s *Reader) Entitlements(ctx context.Context, userID string) (e billing.Entitlements, err error) {
	if s.answers != nil {
		a, err := s.answer(ctx, userID)
		return a.position, err
	}
	err = s.db.Request(ctx, func(ctx context.Context) error {
		e, err = s.Read(ctx, dbq.New(s.db), userID)
		return err
	}, billing.IsAnswer)
	return e, err
}

// Read reads the user's position now through q, kept answers aside: for work that must
// see its own transaction.
func (s *Reader) Read(ctx context.Context, q *dbq.Queries, userID string) (billing.Entitlements, error) {
	rows, err := q.ListUserSubscriptions(ctx, userID)
	if err != nil {
		return billing.Entitlements{}, err
	}
	now := s.now()
	var mirrored []billing.Subscription
	if s.mirror != nil {
		if mirrored, err = s.mirror.Subscriptions(ctx, q, userID, now); err != nil {
			return billing.Entitlements{}, err
		}
	}
	c, err := plans.Load(ctx, q)
	if err != nil {
		return billing.Entitlements{}, err
	}
	return billing.Position(userID, now, plans.Subscriptions(rows, mirrored, s.mirror != nil), c), nil
}

// View loads a user's billing view: their entitlements and this period's usage.
func (s *Reader) View(ctx context.Context, userID string) (billing.BillingView, error) {
	if s.answers != nil {
		a, err := s.answer(ctx, userID)
		if err != nil {
			return billing.BillingView{}, err
		}
		return billing.ViewOf(a.position, a.used), nil
	}
	e, err := s.Entitlements(ctx, userID)
	if err != nil {
		return billing.BillingView{}, err
	}
	used, err := s.UsageThisPeriod(ctx, e)
	if err != nil {
		return billing.BillingView{}, err
	}
	return billing.ViewOf(e, used), nil
}

// Held is a user's answer for an app to hold: the view without usage, and the first
// moment it may change with no event (zero: none is ahead).
type Held struct {
	View      billing.HeldView
	ChangesAt time.Time
}

// Held is userID's answer now, to be held (an entitlement token, the access token's claim).
func (s *Reader) Held(ctx context.Context, userID string) (Held, error) {
	if s.answers != nil {
		a, err := s.kept(ctx, userID)
		if err != nil {
			return Held{}, err
		}
		// The kept position is shared: the view only reads it, and its maps are not changed.
		return Held{View: billing.ViewOf(a.position, nil).Held(), ChangesAt: a.position.ChangesAt()}, nil
	}
	e, err := s.Entitlements(ctx, userID)
	if err != nil {
		return Held{}, err
	}
	return Held{View: billing.ViewOf(e, nil).Held(), ChangesAt: e.ChangesAt()}, nil
}

// ViewJSON is View encoded as billing.EncodeView encodes it. With kept answers it is the
// encoding kept with the answer, shared by every caller: it must not be changed.
func (s *Reader) ViewJSON(ctx context.Context, userID string) ([]byte, error) {
	if s.answers != nil {
		a, err := s.kept(ctx, userID)
		return a.view, err
	}
	v, err := s.View(ctx, userID)
	if err != nil {
		return nil, err
	}
	return billing.EncodeView(v)
}

// RecordUsage adds amount to the user's counter for name in the current period, refusing
// without change when that would pass the limit. Concurrent callers never overshoot: the
// check and the add are one conditional upsert.
func (s *Reader) RecordUsage(ctx context.Context, userID, name string, amount int64) (u billing.Usage, err error) {
	err = s.db.Request(ctx, func(ctx context.Context) error {
		u, err = s.recordUsage(ctx, userID, name, amount)
		return err
	}, billing.IsAnswer)
	return u, err
}

func (s *Reader) recordUsage(ctx context.Context, userID, name string, amount int64) (billing.Usage, error) {
	if amount < 1 {
		return billing.Usage{}, billing.ErrInvalidAmount
	}
	q := dbq.New(s.db)
	e, err := s.Read(ctx, q, userID)
	if err != nil {
		return billing.Usage{}, err
	}
	limit, ok := e.Limit(name)
	if !ok || limit <= 0 {
		return billing.Usage{}, billing.ErrNotEntitled
	}
	u := billing.Usage{Name: name, Limit: limit, PeriodEnd: e.UsagePeriodEnd()}
	if amount > limit {
		return u, billing.ErrLimitExceeded
	}
	used, err := q.AddUsage(ctx, dbq.AddUsageParams{
		UserID: userID, Name: name, PeriodEnd: u.PeriodEnd, Amount: amount, MaxUsed: limit, Now: s.now(),
	})
	if errors.Is(err, sql.ErrNoRows) {
		return u, billing.ErrLimitExceeded
	}
	if err != nil {
		return u, err
	}
	s.answers.forget(userID) // the next answer shows the new count
	u.Used, u.Remaining = used, limit-used
	return u, nil
}

// UsageThisPeriod is every counter of the user in the current period, by name.
func (s *Reader) UsageThisPeriod(ctx context.Context, e billing.Entitlements) (map[string]int64, error) {
	var used map[string]int64
	err := s.db.Request(ctx, func(ctx context.Context) error {
		rows, err := dbq.New(s.db).ListUsage(ctx, dbq.ListUsageParams{UserID: e.UserID, PeriodEnd: e.UsagePeriodEnd()})
		if err != nil {
			return err
		}
		used = make(map[string]int64, len(rows))
		for _, r := range rows {
			used[r.Name] = r.Used
		}
		return nil
	}, billing.IsAnswer)
	return used, err
}
