package pipeline

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

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
func (p *Pipeline) Replay(ctx context.Context, f ReplayFilter, report func(provider, eventID, outcome string)) (int, error) {
	rows, err := dbq.New(p.db).ListEventsForReplay(ctx, dbq.ListEventsForReplayParams{
		Provider: f.Provider, ProviderEventID: f.EventID, Since: f.Since.UTC(), OnlyUnprocessed: f.Unprocessed,
	})
	if err != nil {
		return 0, err
	}
	pace := newSQLitePacer(p.db)
	for i, r := range rows {
		done, err := p.replayOne(ctx, r.Provider, r.ProviderEventID)
		if err != nil {
			return i, fmt.Errorf("replay %s %s: %w", r.Provider, r.ProviderEventID, err)
		}
		p.committed(ctx, []string{done.UserID}, done.changed)
		report(r.Provider, r.ProviderEventID, done.Outcome)
		pace.tick()
	}
	return len(rows), nil
}

// replayOne processes one stored event again in a transaction of its own, after its
// adapter's network step (a fresh read of the purchase) when it has one.
func (p *Pipeline) replayOne(ctx context.Context, provider, eventID string) (Processed, error) {
	a, ok := p.adapters[provider]
	if !ok {
		return Processed{}, fmt.Errorf("no adapter for provider %q", provider)
	}
	key := dbq.GetProviderEventParams{Provider: provider, ProviderEventID: eventID}
	var fetched *billing.Event
	if f, ok := a.(billing.Fetcher); ok {
		stored, err := dbq.New(p.db).GetProviderEvent(ctx, key)
		if err != nil {
			return Processed{}, err
		}
		ev, err := f.Fetch(ctx, billing.Event{ID: stored.ProviderEventID, Type: stored.EventType}, stored.Payload, p.now())
		if err != nil {
			return Processed{}, &RetryError{Err: err}
		}
		fetched = &ev
	}
	var done Processed
	err := p.db.InTx(ctx, func(tx *sql.Tx) error {
		stored, err := dbq.New(tx).GetProviderEvent(ctx, key)
		if err != nil {
			return err
		}
		ev := billing.Event{ID: stored.ProviderEventID, Type: stored.EventType}
		if fetched != nil {
			ev = *fetched
		}
		if done, err = p.process(ctx, tx, savepoint{name: "replayed_event", guarded: true}, event{adapter: a, Event: ev, body: stored.Payload}); err != nil {
			return err
		}
		return p.storeOutcome(ctx, dbq.New(tx), stored.ID, done)
	})
	return done, err
}
