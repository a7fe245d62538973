package app

import (
	"os"
	"testing"

	"github.com/tollgate/tollgate/internal/billing"
)

func TestShapeOf(t *testing.T) {
	for file, want := range map[string]string{
		"../billing/testdata/web/customer.subscription.updated.json": billing.ProviderWeb,
		"../billing/testdata/web/invoice.payment_succeeded.json":     billing.ProviderWeb,
		"../billing/testdata/mobile/subscription_started.json":       billing.ProviderMobile,
		"../billing/testdata/mobile/subscription_renewed.json":       billing.ProviderMobile,
	} {
		body, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if got := shapeOf(body); got != want {
			t.Errorf("%s looks like %q, want %q", file, got, want)
		}
	}
	if got := shapeOf([]byte(`{"hello":"world"}`)); got != "" {
		t.Errorf("an unknown shape is %q", got)
	}
}
