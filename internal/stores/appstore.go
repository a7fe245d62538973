package stores

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/config"
)

// appStore is the App Store, heard directly when APPSTORE_BUNDLE_ID is set, and read
// through the App Store Server API with its key. Its test events are notifications
// written decoded, signed with a local test chain.
var appStore = Store{Name: appstore.Provider, Display: "App Store", InApp: true, Claims: true,
	On: func(cfg config.Config) bool { return cfg.AppStore.BundleID != "" }, Open: openAppStore,
	TestEvents: &TestEvents{
		Shape: "App Store, written decoded", LooksLike: appstoredev.LooksLike, ForUser: appstoredev.ForUser, MoveToNow: appstoredev.MoveToNow,
		Deliver: func(_ context.Context, d Delivery) ([]byte, http.Header, error) {
			signed, err := signAppStore(d)
			return signed, jsonHeader(), err
		},
		NotHeard: func(cfg config.Config, _ int) string {
			return "the server hears notifications signed with the local test chain when started with " + appStoreSettings(cfg)
		},
	},
	API: &API{On: func(cfg config.Config) bool { return cfg.AppStore.APIOn() },
		Needs: "APPSTORE_KEY_ID, APPSTORE_ISSUER_ID and APPSTORE_PRIVATE_KEY_FILE (with APPSTORE_BUNDLE_ID): are required to read the App Store Server API",
		Off: "App Store Server API off: notifications missed while tollgate was away are not caught up. " +
			"Set APPSTORE_KEY_ID, APPSTORE_ISSUER_ID and APPSTORE_PRIVATE_KEY_FILE to read Apple's notification history"},
}

// How far back Apple keeps the notification history, by environment.
var appStoreHistoryKept = map[string]time.Duration{"Production": 180 * 24 * time.Hour, "Sandbox": 30 * 24 * time.Hour}

// openAppStore is the App Store's adapter and, with its key, its API.
func openAppStore(cfg config.Config) (Opened, error) {
	a, err := appStoreAdapter(cfg)
	if err != nil {
		return Opened{}, err
	}
	o := Opened{Adapter: a}
	if cfg.AppStore.APIOn() {
		o.Reading = func(func(time.Duration, string)) (Reading, error) { return appStoreReading(cfg, a) }
	}
	return o, nil
}

// appStoreReading reads the App Store Server API of each environment applied: its
// notification history, and the status of each subscription tollgate knows.
func appStoreReading(cfg config.Config, adapter *appstore.Adapter) (Reading, error) {
	p8, err := os.ReadFile(cfg.AppStore.PrivateKeyFile)
	if err != nil {
		return Reading{}, fmt.Errorf("APPSTORE_PRIVATE_KEY_FILE: %w", err)
	}
	r := Reading{Noun: "notifications"}
	var envs []reconcile.Environment
	for _, env := range cfg.AppStore.Environments {
		api, err := adapter.API(appstore.APIConfig{KeyID: cfg.AppStore.KeyID, IssuerID: cfg.AppStore.IssuerID, PrivateKey: p8,
			Environment: env, BaseURL: cfg.AppStore.APIBase, Pace: float64(cfg.Reconcile.Pace)})
		if err != nil {
			return Reading{}, fmt.Errorf("APPSTORE_PRIVATE_KEY_FILE: %w", err)
		}
		r.Histories = append(r.Histories, reconcile.HistoryOptions{
			Provider: appstore.Provider, Environment: env, MaxBack: appStoreHistoryKept[env], Read: api.NotificationHistory,
		})
		envs = append(envs, reconcile.Environment{
			Name: api.Environment(),
			Read: func(ctx context.Context, id string, _ []byte) (json.RawMessage, error) {
				return api.ReadSubscription(ctx, id)
			},
			NotHere: func(err error) bool { return errors.Is(err, appstore.ErrUnknownSubscription) },
		})
	}
	// A subscription no environment knows is read as unknown: the pass counts it unresolved.
	r.Read = reconcile.Environments(envs, func(id string) (json.RawMessage, error) {
		return json.Marshal(appstore.SubscriptionStatus{OriginalTransactionID: id})
	})
	return r, nil
}

// fixturesBundle is the app the App Store fixtures are about.
const fixturesBundle = "com.example.app"

// appStoreSettings are the settings a server needs to hear notifications signed with the
// local test chain.
func appStoreSettings(cfg config.Config) string {
	return fmt.Sprintf("APPSTORE_BUNDLE_ID=%s APPSTORE_ROOT_CERTS=%s", cmp.Or(cfg.AppStore.BundleID, fixturesBundle),
		appstoredev.RootPath(cfg.AppStore.TestChain))
}

// signAppStore signs a decoded App Store notification with the local test chain at
// APPSTORE_TEST_CHAIN, made on first use, and says which roots the server must pin.
func signAppStore(d Delivery) ([]byte, error) {
	path := d.Config.AppStore.TestChain
	chain, err := appstoredev.Load(path)
	if errors.Is(err, fs.ErrNotExist) {
		if chain, err = appstoredev.New(appstoredev.Options{}); err == nil {
			if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
				err = chain.Save(path)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("APPSTORE_TEST_CHAIN: %w", err)
	}
	fmt.Fprintf(d.Stderr, "signed with the App Store test chain %s: the server verifies it with %s\n", path, appStoreSettings(d.Config))
	var decoded map[string]any
	if err := json.Unmarshal(d.Body, &decoded); err != nil {
		return nil, errors.New("the file is not a JSON object")
	}
	return chain.SignDecoded(decoded)
}

// appStoreAdapter is the App Store's adapter, with the roots of APPSTORE_ROOT_CERTS when set.
func appStoreAdapter(cfg config.Config) (*appstore.Adapter, error) {
	c := appstore.Config{BundleID: cfg.AppStore.BundleID, Environments: cfg.AppStore.Environments}
	if path := cfg.AppStore.RootCerts; path != "" {
		roots, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("APPSTORE_ROOT_CERTS: %w", err)
		}
		if len(bytes.TrimSpace(roots)) == 0 {
			return nil, fmt.Errorf("APPSTORE_ROOT_CERTS: %s is empty; want the root certificates (PEM or DER) to verify App Store notifications against", path)
		}
		c.RootCerts = roots
	}
	a, err := appstore.New(c)
	if err != nil {
		return nil, fmt.Errorf("APPSTORE_ROOT_CERTS: %w", err)
	}
	return a, nil
}
