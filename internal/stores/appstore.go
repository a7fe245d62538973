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

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/config"
)

// appStore is the App Store, heard directly when APPSTORE_BUNDLE_ID is set. Its test
// events are notifications written decoded, signed with a local test chain.
var appStore = Store{Name: billing.ProviderAppStore,
	On: func(cfg config.Config) bool { return cfg.AppStore.BundleID != "" }, Adapter: appStoreAdapter,
	TestEvents: TestEvents{
		Shape: "App Store, written decoded", LooksLike: appstoredev.LooksLike, ForUser: appstoredev.ForUser, MoveToNow: appstoredev.MoveToNow,
		Deliver: func(_ context.Context, d Delivery) ([]byte, http.Header, error) {
			signed, err := signAppStore(d)
			return signed, jsonHeader(), err
		},
		NotHeard: func(cfg config.Config) string {
			return "the server hears notifications signed with the local test chain when started with " + appStoreSettings(cfg)
		},
	}}

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
func appStoreAdapter(cfg config.Config) (billing.Adapter, error) {
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
