package stores

import (
	"bytes"
	"fmt"
	"os"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/config"
)

// appStore is the App Store, heard directly when APPSTORE_BUNDLE_ID is set.
var appStore = Store{Name: billing.ProviderAppStore,
	On: func(cfg config.Config) bool { return cfg.AppStore.BundleID != "" }, Adapter: appStoreAdapter}

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
