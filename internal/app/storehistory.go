package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/db"
)

// How far back Apple keeps the notification history, by environment.
var appStoreHistoryKept = map[string]time.Duration{"Production": 180 * 24 * time.Hour, "Sandbox": 30 * 24 * time.Hour}

// storeHistories are the App Store's history catch-ups, one per environment applied, when
// the App Store Server API's key is set; none otherwise.
func storeHistories(d *db.DB, e env, b *billingParts) ([]*reconcile.History, error) {
	cfg := e.cfg.AppStore
	if !cfg.APIOn() {
		return nil, nil
	}
	a, ok := b.pipeline.Adapter(billing.ProviderAppStore)
	adapter, isAppStore := a.(*appstore.Adapter)
	if !ok || !isAppStore {
		return nil, nil
	}
	p8, err := os.ReadFile(cfg.PrivateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("APPSTORE_PRIVATE_KEY_FILE: %w", err)
	}
	var list []*reconcile.History
	for _, env := range cfg.Environments {
		api, err := adapter.API(appstore.APIConfig{KeyID: cfg.KeyID, IssuerID: cfg.IssuerID, PrivateKey: p8, Environment: env, BaseURL: cfg.APIBase,
			Pace: float64(e.cfg.Reconcile.Pace)})
		if err != nil {
			return nil, fmt.Errorf("APPSTORE_PRIVATE_KEY_FILE: %w", err)
		}
		list = append(list, reconcile.NewHistory(d, b.pipeline, e.log, reconcile.HistoryOptions{
			Provider: billing.ProviderAppStore, Environment: env, MaxBack: appStoreHistoryKept[env], Read: api.NotificationHistory,
		}))
	}
	return list, nil
}

// catchUp runs each history's catch-up at start-up and then every interval (a day when
// reconciling is off), until ctx ends. A refused key is logged naming the settings; the
// next round tries again, in case they were fixed meanwhile.
func catchUp(ctx context.Context, e env, histories []*reconcile.History, interval time.Duration) {
	if len(histories) == 0 {
		return
	}
	if interval <= 0 {
		interval = 24 * time.Hour
	}
	for {
		for _, h := range histories {
			_, err := h.CatchUp(ctx, time.Time{}, pipeline.CatchUpOptions{})
			if errors.Is(err, reconcile.ErrBusy) { // another instance is reading it
				continue
			}
			if err != nil && ctx.Err() == nil {
				level := e.log.Warn
				if errors.Is(err, appstore.ErrAPIKeyRefused) {
					level = e.log.Error
				}
				level("catching up from the App Store's notification history failed; the next round tries again",
					"environment", h.Environment(), "error", err.Error())
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
