package reader

import (
	"context"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// answer is userID's position and usage now: from the cache, else read (and kept), copied
// so that the caller may change it.
func (s *Reader) answer(ctx context.Context, userID string) (cachedAnswer, error) {
	a, err := s.kept(ctx, userID)
	return a.clone(), err
}

// kept is userID's answer now as the cache holds it, shared: it must not be changed. A
// kept answer carries its view already encoded, so that the requests answered from memory
// (/api/v1/me, the service API) do not encode it again each time.
func (s *Reader) kept(ctx context.Context, userID string) (cachedAnswer, error) {
	now := s.now()
	if a, ok := s.answers.get(userID, now); ok {
		return a, nil
	}
	generation := s.answers.begin()
	var a cachedAnswer
	err := s.db.Request(ctx, func(ctx context.Context) error {
		var err error
		a, err = s.readAnswer(ctx, userID, now)
		return err
	}, billing.IsAnswer)
	if err != nil {
		return cachedAnswer{}, err
	}
	if a.view, err = billing.EncodeView(billing.ViewOf(a.position, a.used)); err != nil {
		return cachedAnswer{}, err
	}
	s.answers.keep(generation, a, now)
	return a, nil
}

// readAnswer reads userID's answer at now in one statement (UserAnswer), with the plan
// catalogue from memory at the version that statement returns.
func (s *Reader) readAnswer(ctx context.Context, userID string, now time.Time) (cachedAnswer, error) {
	q := dbq.New(s.db)
	rows, err := q.UserAnswer(ctx, dbq.UserAnswerParams{UserID: userID, MonthEnd: billing.MonthEnd(now)})
	if err != nil {
		return cachedAnswer{}, err
	}
	var version int64
	var subscriptions []dbq.ListUserSubscriptionsRow
	var usage []dbq.UserAnswerRow
	for _, r := range rows {
		switch r.Kind {
		case "subscription":
			subscriptions = append(subscriptions, dbq.ListUserSubscriptionsRow{
				ProviderSubscriptionID: r.ProviderSubscriptionID, Provider: r.Provider, Status: r.Status,
				CurrentPeriodEnd: r.PeriodEnd, UpdatedAt: r.UpdatedAt, ID: r.ID, PlanID: r.PlanID,
			})
		case "usage":
			usage = append(usage, r)
		case "version":
			version = r.PlansVersion
		}
	}
	c, err := s.catalogues.At(ctx, q, version)
	if err != nil {
		return cachedAnswer{}, err
	}
	for i, r := range subscriptions {
		subscriptions[i] = plans.WithPlan(c, r)
	}
	a := cachedAnswer{position: billing.Position(userID, now, plans.Subscriptions(subscriptions, nil, false), c), used: map[string]int64{}}
	period := a.position.UsagePeriodEnd()
	for _, u := range usage {
		if u.PeriodEnd.Time.Equal(period) {
			a.used[u.Name] = u.Used
		}
	}
	return a, nil
}

// ListenForChanges forgets cached answers as the database notifies changes made anywhere,
// until ctx ends. Run it beside the server.
func (s *Reader) ListenForChanges(ctx context.Context) {
	if s.answers == nil {
		return
	}
	s.db.Listen(ctx, "tollgate_billing", s.log, func(user string) {
		if user == "" { // (re)connected: what was notified meanwhile is lost
			user = "*"
		}
		s.answers.forget(user)
	})
}
