// Package billing ingests the web and mobile providers' webhooks into one canonical
// subscription model and answers entitlement questions from it. It owns its SQL (through
// the dbq queries) and its HTTP handlers.
package billing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/webprovider"
)

// Options configures a Service.
type Options struct {
	WebSecret     string
	MobileSecret  string
	MaxBody       int64
	MobileAliases map[string]string
	// MountWebWebhook is false in sync_engine mode, where the web route must not exist.
	MountWebWebhook bool
	// SyncEngineSchema, in sync_engine mode, is the mirror schema web subscriptions are read from.
	SyncEngineSchema string
	// WebAPI, when set (WEB_API_KEY), lets users start web purchases and open the
	// provider's portal; PublicURL and CheckoutRedirectOrigins bound where they return to.
	WebAPI                  *webprovider.Client
	PublicURL               string
	CheckoutRedirectOrigins []string
	// OutboundWebhooks records an entitlements.changed event in the outbox with every
	// change of a user's billing answer (OUTBOUND_WEBHOOK_URL is set).
	OutboundWebhooks bool
	// AnswersMaxAge, above zero, keeps users' billing answers in memory for at most that
	// long (answerCache). Not in sync_engine mode, whose mirror is written by another program.
	AnswersMaxAge time.Duration
	Clock         func() time.Time
	Registerer    prometheus.Registerer
}

// Service is the billing domain: webhook ingestion, plans, entitlements and usage.
type Service struct {
	db            *db.DB
	log           *slog.Logger
	now           func() time.Time
	webSecret     string
	mobileSecret  string
	maxBody       int64
	mobileAliases map[string]string
	mountWeb      bool
	mirrorSchema  string
	webAPI        *webprovider.Client
	publicURL     string
	// redirectOrigins are the scheme://host[:port] a checkout may return to.
	redirectOrigins []string
	announce        bool // record changes in the outbox
	outcomes        *prometheus.CounterVec
	onChange        []func(ctx context.Context, userID string)
	// plans is the plan catalogue and price mapping kept in memory, at one plans_version
	// (catalogueAt): for plan resolution, change detection and answers.
	plans atomic.Pointer[versionedCatalogue]
	// answers is nil when users' answers are not kept in memory.
	answers *answerCache
}

// New builds a Service. Registerer may be nil.
func New(d *db.DB, log *slog.Logger, opts Options) *Service {
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	s := &Service{
		db: d, log: log, webSecret: opts.WebSecret, mobileSecret: opts.MobileSecret, maxBody: opts.MaxBody,
		mobileAliases: opts.MobileAliases, mountWeb: opts.MountWebWebhook, mirrorSchema: opts.SyncEngineSchema,
		webAPI: opts.WebAPI, announce: opts.OutboundWebhooks, publicURL: strings.TrimRight(opts.PublicURL, "/"),
		now: func() time.Time { return clock().UTC() },
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_webhook_events_total",
			Help: "Webhook deliveries by provider and outcome (applied, duplicate, stale, ignored, unresolved, invalid, or the reason it was refused).",
		}, []string{"provider", "outcome"}),
	}
	if u, err := url.Parse(s.publicURL); err == nil && u.Host != "" {
		s.redirectOrigins = append(s.redirectOrigins, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	for _, origin := range opts.CheckoutRedirectOrigins {
		s.redirectOrigins = append(s.redirectOrigins, strings.ToLower(strings.TrimRight(origin, "/")))
	}
	if s.maxBody <= 0 {
		s.maxBody = 1 << 20
	}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(s.outcomes)
	}
	if s.mirrorSchema == "" {
		s.answers = newAnswerCache(opts.AnswersMaxAge)
	}
	return s
}

// Ingest stores one verified event and runs its processor in a single transaction, so an
// event is either recorded and processed or, on any database failure, not there at all.
func (s *Service) Ingest(ctx context.Context, provider, eventID, eventType string, body []byte) (Processed, error) {
	return s.ingest(ctx, provider, eventID, eventType, body, nil)
}

// ingest is Ingest with the web event already decoded from body, or nil.
func (s *Service) ingest(ctx context.Context, provider, eventID, eventType string, body []byte, decoded *webEvent) (Processed, error) {
	var done Processed
	err := s.request(ctx, func(ctx context.Context) error {
		return s.db.InTx(ctx, func(tx *sql.Tx) error {
			rowID, err := dbq.New(tx).UpsertProviderEvent(ctx, dbq.UpsertProviderEventParams{
				Provider: provider, ProviderEventID: eventID, EventType: eventType, Payload: body, Now: s.now(),
			})
			if err != nil {
				return err
			}
			done, err = s.processEvent(ctx, tx, rowID, provider, eventID, eventType, body, decoded, true)
			return err
		})
	})
	if err == nil {
		s.answers.forget(append(done.changed, done.UserID)...)
		s.billingChanged(ctx, done.changed)
	}
	return done, err
}

// OnBillingChange registers fn, called after a transaction that changed a user's billing
// answer (the view /api/v1/me gives) commits, with that user's id: by webhooks, replays
// and backfills, not by an event that changed no answer (see upsertSubscription). It runs
// before the webhook is answered, so it should be quick, or hand the work off. Register
// before serving.
func (s *Service) OnBillingChange(fn func(ctx context.Context, userID string)) {
	s.onChange = append(s.onChange, fn)
}

// billingChanged calls the hooks for each changed user once. A hook that panics is logged;
// the change is committed regardless.
func (s *Service) billingChanged(ctx context.Context, users []string) {
	for i, userID := range users {
		if slices.Contains(users[:i], userID) {
			continue
		}
		for _, fn := range s.onChange {
			func() {
				defer func() {
					if v := recover(); v != nil {
						s.log.ErrorContext(ctx, "billing change hook panicked", "user_id", userID, "panic", v)
					}
				}()
				fn(ctx, userID)
			}()
		}
	}
}

// request runs one request's database work within DB_TIMEOUT and tells the database's
// outage log how it went. A refusal the domain decided (no entitlement, over the limit) is
// an answer, not a failure.
func (s *Service) request(ctx context.Context, work func(ctx context.Context) error) error {
	ctx, cancel := s.db.Bound(ctx)
	defer cancel()
	err := work(ctx)
	if errors.Is(err, ErrNotEntitled) || errors.Is(err, ErrLimitExceeded) || errors.Is(err, ErrInvalidAmount) {
		s.db.Answered(ctx)
		return err
	}
	return s.db.Report(ctx, err)
}

// ReplayFilter selects stored events to replay; zero fields match everything.
type ReplayFilter struct {
	Provider    string
	EventID     string
	Since       time.Time
	Unprocessed bool
}

// On SQLite a command that writes many transactions (replay, backfill) pauses for
// sqlitePause after every sqliteStreak of work. SQLite has one writer, and another process
// waiting for the lock (a live server) polls with sleeps of at most 100 ms; back-to-back
// transactions left it almost no gap to land in, and its webhooks waited past DB_TIMEOUT.
// A pause longer than that longest sleep lets every waiting writer in, at a cost of about
// a third of the command's speed.
const (
	sqliteStreak = 250 * time.Millisecond
	sqlitePause  = 120 * time.Millisecond
)

// sqlitePacer makes those pauses; on Postgres it does nothing.
type sqlitePacer struct {
	on     bool
	streak time.Time
}

func newSQLitePacer(d *db.DB) *sqlitePacer {
	return &sqlitePacer{on: d.Engine == db.SQLite, streak: time.Now()}
}

// tick is called after each transaction.
func (p *sqlitePacer) tick() {
	if p.on && time.Since(p.streak) > sqliteStreak {
		time.Sleep(sqlitePause)
		p.streak = time.Now()
	}
}

// Replay re-runs the selected stored events through the processors, each in its own
// transaction, and reports each outcome. Processing is idempotent, so replaying an event
// that was applied changes nothing; one that was unresolved or invalid gets another try.
func (s *Service) Replay(ctx context.Context, f ReplayFilter, report func(provider, eventID, outcome string)) (int, error) {
	rows, err := dbq.New(s.db).ListEventsForReplay(ctx, dbq.ListEventsForReplayParams{
		Provider: f.Provider, ProviderEventID: f.EventID, Since: f.Since.UTC(), OnlyUnprocessed: f.Unprocessed,
	})
	if err != nil {
		return 0, err
	}
	pace := newSQLitePacer(s.db)
	for i, r := range rows {
		var done Processed
		err := s.db.InTx(ctx, func(tx *sql.Tx) error {
			ev, err := dbq.New(tx).GetProviderEvent(ctx, dbq.GetProviderEventParams{Provider: r.Provider, ProviderEventID: r.ProviderEventID})
			if err != nil {
				return err
			}
			done, err = s.processEvent(ctx, tx, ev.ID, ev.Provider, ev.ProviderEventID, ev.EventType, ev.Payload, nil, false)
			return err
		})
		if err != nil {
			return i, fmt.Errorf("replay %s %s: %w", r.Provider, r.ProviderEventID, err)
		}
		s.answers.forget(append(done.changed, done.UserID)...)
		s.billingChanged(ctx, done.changed)
		report(r.Provider, r.ProviderEventID, done.Outcome)
		pace.tick()
	}
	return len(rows), nil
}
