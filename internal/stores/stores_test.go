package stores_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/playstore/playdev"
	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/stores"
)

// TestEachStoreIsItsAdapter: every store of the list is named as its adapter names itself,
// once; with every store turned on, Adapters answers them all, in the list's order.
func TestEachStoreIsItsAdapter(t *testing.T) {
	key, err := playdev.ServiceAccountJSON("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "play.json")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(func(name string) string {
		return map[string]string{"APP_ENV": "test", "WEB_WEBHOOK_SECRET": "whsec_x", "MOBILE_WEBHOOK_SECRET": "m",
			"APPSTORE_BUNDLE_ID": "com.example.app", "PLAY_PACKAGE_NAME": "com.example.app",
			"PLAY_PUSH_AUDIENCE": "https://billing.example.test/billing/webhooks/playstore", "PLAY_PUSH_SERVICE_ACCOUNT": "push@example.iam.gserviceaccount.com",
			"PLAY_SERVICE_ACCOUNT_JSON": keyFile, "PADDLE_WEBHOOK_SECRET": "pdl_ntfset_x"}[name]
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range stores.All() {
		if seen[s.Name] {
			t.Errorf("%s is listed twice", s.Name)
		}
		seen[s.Name] = true
		if !s.On(cfg) {
			t.Errorf("%s is off with its settings set", s.Name)
		}
	}
	opened, err := stores.All().Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	names := stores.All().Names()
	if len(opened) != len(names) || names[0] != billing.ProviderWeb {
		t.Fatalf("%d stores open of %v", len(opened), names)
	}
	for i, s := range opened {
		if s.Adapter.Provider() != names[i] {
			t.Errorf("store %s's adapter says it is %s", names[i], s.Adapter.Provider())
		}
		if s.Display == "" {
			t.Errorf("store %s has no name for people", s.Name)
		}
	}
}
