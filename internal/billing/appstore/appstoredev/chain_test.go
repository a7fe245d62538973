package appstoredev_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
)

// adapter is the App Store's adapter pinned to chain's root, as APPSTORE_ROOT_CERTS pins it.
func adapter(t *testing.T, chain *appstoredev.Chain) billing.Adapter {
	t.Helper()
	a, err := appstore.New(appstore.Config{BundleID: billingtest.Bundle, RootCerts: chain.RootPEM(), Environments: []string{"Production", "Sandbox"}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestWhatAChainSignsTheAdapterAccepts: a notification the chain signs verifies with the
// adapter pinned to its root, and says what it was given; one signed by another chain, or
// changed after signing, does not. A chain saved and loaded again signs alike.
func TestWhatAChainSignsTheAdapterAccepts(t *testing.T) {
	t.Parallel()
	chain, err := appstoredev.New(appstoredev.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	n := billingtest.AppStoreNotification("n-1", "SUBSCRIBED", "INITIAL_BUY", "7000001", billingtest.FixtureUser, now, now.Add(30*24*time.Hour))
	body, err := chain.Body(n)
	if err != nil {
		t.Fatal(err)
	}
	a := adapter(t, chain)
	if err := a.Verify(nil, body, now); err != nil {
		t.Fatalf("the chain's own notification: %v", err)
	}
	ev, err := a.Parse(body)
	if err != nil || ev.ID != "n-1" || ev.Type != "SUBSCRIBED" {
		t.Fatalf("event %+v %v", ev, err)
	}
	other, _ := appstoredev.New(appstoredev.Options{})
	if err := adapter(t, other).Verify(nil, body, now); err == nil {
		t.Fatal("another root accepted the chain's notification")
	}
	var signed map[string]string
	json.Unmarshal(body, &signed)
	parts := strings.Split(signed["signedPayload"], ".")
	tampered, _ := json.Marshal(map[string]string{"signedPayload": parts[0] + "." + parts[1] + "x." + parts[2]})
	if err := a.Verify(nil, tampered, now); err == nil {
		t.Fatal("a changed payload verified")
	}

	path := filepath.Join(t.TempDir(), "chain.pem")
	if err := chain.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := appstoredev.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	again, err := loaded.Body(n)
	if err != nil || a.Verify(nil, again, now) != nil {
		t.Fatalf("a loaded chain's notification: %v", err)
	}
}
