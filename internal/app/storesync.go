package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/periodic"
	"github.com/tollgate/tollgate/internal/stores"
)

// storeSync is one store's reading of its own API, when its API settings are set: its
// histories (the App Store's notifications, one per environment; Google Play's voided
// purchases), caught up on at start-up and before each pass, and its reconciler, whose
// passes read the store's subscriptions (every one its API lists, or each one tollgate
// knows).
type storeSync struct {
	provider string
	// noun names the histories' items in the command's summary lines.
	noun       string
	histories  []*reconcile.History
	reconciler *reconcile.Reconciler
}

// storeSyncs are the stores whose API settings are set, in the list's order.
func storeSyncs(d *db.DB, e env, b *billingParts, reg prometheus.Registerer) ([]*storeSync, error) {
	var list []*storeSync
	for _, s := range b.stores {
		if s.Reading == nil {
			continue
		}
		sync, err := newStoreSync(d, e, b, s, reg)
		if err != nil {
			return nil, err
		}
		list = append(list, sync)
	}
	return list, nil
}

// newStoreSync reads the store's API as its entry in the list says: a listing is read
// at RECONCILE_PACE requests a second (a store that reads one subscription at a time
// paces itself).
func newStoreSync(d *db.DB, e env, b *billingParts, s stores.OpenStore, reg prometheus.Registerer) (*storeSync, error) {
	r, err := s.Reading(nil)
	if err != nil {
		return nil, err
	}
	sync := &storeSync{provider: s.Name, noun: r.Noun}
	for _, h := range r.Histories {
		sync.histories = append(sync.histories, reconcile.NewHistory(d, b.pipeline, e.log, h))
	}
	read := reconcile.KnownSubscriptions(d, s.Name, time.Now, r.Read)
	if r.List != nil {
		read = paced(r.List(stores.ListQuery{}), rate.NewLimiter(rate.Limit(e.cfg.Reconcile.Pace), 1))
	}
	sync.reconciler = reconcile.New(d, b.pipeline, e.log, reconcile.Options{Provider: s.Name, Registerer: reg, Read: read,
		Before: sync.beforePass(e)})
	return sync, nil
}

// paced reads each page once pace allows.
func paced(read pipeline.PageReader, pace *rate.Limiter) pipeline.PageReader {
	return func(ctx context.Context, after string) (pipeline.Page, error) {
		if err := pace.Wait(ctx); err != nil {
			return pipeline.Page{}, err
		}
		return read(ctx, after)
	}
}

// reading is the reading of the API of the store named provider, which must be on with
// its API settings set.
func (b *billingParts) reading(provider string, onWait func(time.Duration, string)) (stores.Reading, error) {
	for _, s := range b.stores {
		if s.Name == provider && s.Reading != nil {
			return s.Reading(onWait)
		}
	}
	return stores.Reading{}, fmt.Errorf("%s is off, or its API settings are not set", provider)
}

// run catches up at start-up, whatever RECONCILE_INTERVAL, then runs a pass on the
// reconcile schedule, each catching up first; with reconciling off, it catches up daily.
// A history another process is reading is tried again every few seconds until it is
// free: a read cut short by a process that died is taken up once its lease runs out.
func (s *storeSync) run(ctx context.Context, e env, interval time.Duration) {
	switch {
	case interval <= 0 && len(s.histories) == 0:
		return // nothing to catch up on, and no passes
	case interval > 0:
		s.catchUpWhenFree(ctx, e)
		s.reconciler.Run(ctx, interval)
		return
	}
	periodic.Run(ctx, nil, func(ctx context.Context) time.Duration {
		s.catchUpWhenFree(ctx, e)
		return 24 * time.Hour
	})
}

func (s *storeSync) beforePass(e env) func(context.Context) {
	return func(ctx context.Context) { s.catchUpWhenFree(ctx, e) }
}

// catchUpWhenFree catches up on each history, and again every few seconds on those another
// process held the lease of.
func (s *storeSync) catchUpWhenFree(ctx context.Context, e env) {
	for pending := s.histories; ; {
		if pending = s.catchUp(ctx, e, pending); len(pending) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(reconcile.BusyRetry):
		}
	}
}

// catchUp reads each of histories from where the last read stopped, or the last complete
// read ended, and gives those another process held the lease of. A refused key is logged
// naming the settings; the next round tries again, in case they were fixed.
func (s *storeSync) catchUp(ctx context.Context, e env, histories []*reconcile.History) (busy []*reconcile.History) {
	for _, h := range histories {
		_, err := h.CatchUp(ctx, time.Time{}, pipeline.CatchUpOptions{})
		if errors.Is(err, reconcile.ErrBusy) {
			busy = append(busy, h) // another instance is reading it, or died doing so
			continue
		}
		if err == nil || ctx.Err() != nil {
			continue
		}
		level := e.log.Warn
		if errors.Is(err, billing.ErrAPIRefused) {
			level = e.log.Error
		}
		level("catching up from the store's history failed; the next round tries again",
			"provider", s.provider, "history", h.Environment(), "error", err.Error())
	}
	return busy
}
