package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/playstore"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/periodic"
)

// How far back Apple keeps the notification history, by environment.
var appStoreHistoryKept = map[string]time.Duration{"Production": 180 * 24 * time.Hour, "Sandbox": 30 * 24 * time.Hour}

// playLimit is the most requests a second a pass makes of Google Play, whatever
// RECONCILE_PACE says: under Google's quota. The voided purchases list has a tighter
// quota of its own, and is read at most once a second.
const playLimit = 40

// storeSync is one store's reading of its own API, when its API settings are set: its
// histories (the App Store's notifications, one per environment; Google Play's voided
// purchases), caught up on at start-up and before each pass, and its reconciler, whose
// passes read each subscription tollgate knows.
type storeSync struct {
	provider string
	// noun names the histories' items in the command's summary lines.
	noun       string
	histories  []*reconcile.History
	reconciler *reconcile.Reconciler
}

// storeSyncs are the stores whose APIs are configured: the App Store with its key, Google
// Play whenever it is on (its service account key is required).
func storeSyncs(d *db.DB, e env, b *billingParts, reg prometheus.Registerer) ([]*storeSync, error) {
	var list []*storeSync
	apple, err := appStoreSync(d, e, b, reg)
	if err != nil {
		return nil, err
	}
	if apple != nil {
		list = append(list, apple)
	}
	if play := playStoreSync(d, e, b, reg); play != nil {
		list = append(list, play)
	}
	return list, nil
}

// appStoreSync reads the App Store Server API of each environment applied.
func appStoreSync(d *db.DB, e env, b *billingParts, reg prometheus.Registerer) (*storeSync, error) {
	cfg := e.cfg.AppStore
	a, ok := b.pipeline.Adapter(billing.ProviderAppStore)
	adapter, isAppStore := a.(*appstore.Adapter)
	if !cfg.APIOn() || !ok || !isAppStore {
		return nil, nil
	}
	p8, err := os.ReadFile(cfg.PrivateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("APPSTORE_PRIVATE_KEY_FILE: %w", err)
	}
	s := &storeSync{provider: billing.ProviderAppStore, noun: "notifications"}
	var apis []*appstore.API
	for _, env := range cfg.Environments {
		api, err := adapter.API(appstore.APIConfig{KeyID: cfg.KeyID, IssuerID: cfg.IssuerID, PrivateKey: p8, Environment: env, BaseURL: cfg.APIBase,
			Pace: float64(e.cfg.Reconcile.Pace)})
		if err != nil {
			return nil, fmt.Errorf("APPSTORE_PRIVATE_KEY_FILE: %w", err)
		}
		apis = append(apis, api)
		s.histories = append(s.histories, reconcile.NewHistory(d, b.pipeline, e.log, reconcile.HistoryOptions{
			Provider: billing.ProviderAppStore, Environment: env, MaxBack: appStoreHistoryKept[env], Read: api.NotificationHistory,
		}))
	}
	s.reconciler = reconcile.New(d, b.pipeline, e.log, reconcile.Options{Provider: billing.ProviderAppStore, Registerer: reg,
		Read: reconcile.KnownSubscriptions(d, billing.ProviderAppStore, time.Now, appStoreStatuses(apis)), Before: s.beforePass(e)})
	return s, nil
}

// appStoreStatuses reads a subscription's status from the first environment that knows
// it; one that none knows is read as unknown, and the pass counts it unresolved.
func appStoreStatuses(apis []*appstore.API) reconcile.StoreReader {
	envs := make([]reconcile.Environment, 0, len(apis))
	for _, api := range apis {
		envs = append(envs, reconcile.Environment{
			Name: api.Environment(),
			Read: func(ctx context.Context, id string, _ []byte) (json.RawMessage, error) {
				return api.ReadSubscription(ctx, id)
			},
			NotHere: func(err error) bool { return errors.Is(err, appstore.ErrUnknownSubscription) },
		})
	}
	return reconcile.Environments(envs, func(id string) (json.RawMessage, error) {
		return json.Marshal(appstore.SubscriptionStatus{OriginalTransactionID: id})
	})
}

// playStoreSync reads Google Play's voided purchases and subscriptionsv2, paced under
// Google's limit.
func playStoreSync(d *db.DB, e env, b *billingParts, reg prometheus.Registerer) *storeSync {
	a, ok := b.pipeline.Adapter(billing.ProviderPlayStore)
	play, isPlay := a.(*playstore.Adapter)
	if !ok || !isPlay {
		return nil
	}
	limit := float64(playLimit)
	if pace := float64(e.cfg.Reconcile.Pace); pace > 0 {
		limit = min(limit, pace)
	}
	pace, voidedPace := rate.NewLimiter(rate.Limit(limit), 1), rate.NewLimiter(1, 1)
	voided := func(ctx context.Context, start, end time.Time, page string) (billing.HistoryPage, error) {
		if err := voidedPace.Wait(ctx); err != nil {
			return billing.HistoryPage{}, err
		}
		return play.VoidedPurchases(ctx, start, end, page)
	}
	read := func(ctx context.Context, token string, state []byte) (json.RawMessage, error) {
		if err := pace.Wait(ctx); err != nil {
			return nil, err
		}
		return play.ReadSubscription(ctx, token, state)
	}
	s := &storeSync{provider: billing.ProviderPlayStore, noun: "voided purchases"}
	s.histories = []*reconcile.History{reconcile.NewHistory(d, b.pipeline, e.log, reconcile.HistoryOptions{
		Provider: billing.ProviderPlayStore, Environment: "voided", MaxBack: playstore.VoidedKept, Read: voided,
	})}
	s.reconciler = reconcile.New(d, b.pipeline, e.log, reconcile.Options{Provider: billing.ProviderPlayStore, Registerer: reg,
		Read: reconcile.KnownSubscriptions(d, billing.ProviderPlayStore, time.Now, read), Before: s.beforePass(e)})
	return s
}

// run catches up at start-up, whatever RECONCILE_INTERVAL, then runs a pass on the
// reconcile schedule, each catching up first; with reconciling off, it catches up daily.
// A history another process is reading is tried again every few seconds until it is
// free: a read cut short by a process that died is taken up once its lease runs out.
func (s *storeSync) run(ctx context.Context, e env, interval time.Duration) {
	if interval > 0 {
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
