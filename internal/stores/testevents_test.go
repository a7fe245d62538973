package stores_test

import (
	"os"
	"testing"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/paddle"
	"github.com/tollgate/tollgate/internal/billing/playstore"
	"github.com/tollgate/tollgate/internal/stores"
)

// TestShapeOf: each store's fixtures look like its own events and no other's; a JSON
// object no store sends looks like none.
func TestShapeOf(t *testing.T) {
	for file, want := range map[string]string{
		"../billing/testdata/web/customer.subscription.updated.json": billing.ProviderWeb,
		"../billing/testdata/web/invoice.payment_succeeded.json":     billing.ProviderWeb,
		"../billing/testdata/mobile/subscription_started.json":       billing.ProviderMobile,
		"../billing/testdata/mobile/subscription_renewed.json":       billing.ProviderMobile,
		"../billing/testdata/appstore/did_renew.json":                appstore.Provider,
		"../billing/testdata/playstore/subscription_canceled.json":   playstore.Provider,
		"../billing/testdata/paddle/subscription.created.json":       paddle.Provider,
		"../billing/testdata/paddle/adjustment.updated.json":         paddle.Provider,
	} {
		body, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if got := stores.All().ShapeOf(body); got != want {
			t.Errorf("%s looks like %q, want %q", file, got, want)
		}
	}
	if got := stores.All().ShapeOf([]byte(`{"hello":"world"}`)); got != "" {
		t.Errorf("an unknown shape is %q", got)
	}
}
