package appstore_test

// Apple's own test vectors, from Apple's App Store Server Library for Python (MIT; the
// licence is beside them in testdata/apple): its test root, shipped as DER, and
// notifications signed by a chain to it; and the decoded notifications its tests sign.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
)

func appleFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "apple", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func signedBody(jws []byte) []byte {
	b, _ := json.Marshal(map[string]string{"signedPayload": string(jws)})
	return b
}

// Apple's test root, as Apple ships it (DER), verifies Apple's signed test notification;
// the same notification for another app, or without its chain, is refused.
func TestAppleTestVectorsWithADERRoot(t *testing.T) {
	a, err := appstore.New(appstore.Config{BundleID: "com.example", RootCerts: appleFile(t, "testCA.der"), Environments: []string{"Sandbox"}})
	if err != nil {
		t.Fatal(err)
	}
	body := signedBody(appleFile(t, "testNotification"))
	if err := a.Verify(nil, body, time.Now()); err != nil {
		t.Fatalf("Apple's test notification with Apple's test root: %v", err)
	}
	ev, err := a.Parse(body)
	if err != nil || ev.Type != "TEST" || ev.ID != "9ad56bd2-0bc6-42e0-af24-fd996d87a1e6" {
		t.Fatalf("parsed %+v %v", ev, err)
	}
	if r, err := a.Read(ev, body); err != nil || r.Ignore == "" {
		t.Fatalf("a TEST notification is stored and changes nothing: %+v %v", r, err)
	}
	for name, want := range map[string]string{"wrongBundleId": "another app", "missingX5CHeaderClaim": "x5c"} {
		if err := a.Verify(nil, signedBody(appleFile(t, name)), time.Now()); err == nil {
			t.Errorf("%s verified, want a refusal about %s", name, want)
		}
	}
}

// An empty roots file is an error, never Apple's real root in its place.
func TestEmptyRootsAreRefused(t *testing.T) {
	for _, roots := range [][]byte{{}, []byte("\n  \n")} {
		if _, err := appstore.New(appstore.Config{BundleID: bundle, RootCerts: roots}); err == nil {
			t.Errorf("roots %q accepted", roots)
		}
	}
	if _, err := appstore.New(appstore.Config{BundleID: bundle, RootCerts: []byte("not a certificate")}); err == nil {
		t.Error("a file that is neither PEM nor DER accepted")
	}
}

// EXTERNAL_PURCHASE_TOKEN and RESCIND_CONSENT carry their app in externalPurchaseToken and
// appData, not data or summary: verified as Apple's libraries verify them, answered,
// stored, and changing nothing. Their environment filters them like any notification's.
func TestNotificationsWithoutDataOrSummary(t *testing.T) {
	c := chain(t, appstoredev.Options{})
	for _, tc := range []struct {
		file         string
		environments []string
		filtered     bool
	}{
		{"signedExternalPurchaseTokenNotification.json", []string{"Production"}, false},
		{"signedExternalPurchaseTokenSandboxNotification.json", []string{"Production"}, true},
		{"signedExternalPurchaseTokenSandboxNotification.json", []string{"Sandbox"}, false},
		{"signedRescindConsentNotification.json", []string{"Production"}, true}, // appData.environment is LocalTesting
		{"signedRescindConsentNotification.json", []string{"LocalTesting"}, false},
	} {
		a, err := appstore.New(appstore.Config{BundleID: "com.example", RootCerts: c.RootPEM(), Environments: tc.environments})
		if err != nil {
			t.Fatal(err)
		}
		var decoded map[string]any
		if err := json.Unmarshal(appleFile(t, tc.file), &decoded); err != nil {
			t.Fatal(err)
		}
		decoded["signedDate"] = signed.UnixMilli() // Apple's 2023 date is before the test chain's certificates
		body, err := c.SignDecoded(decoded)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Verify(nil, body, time.Now()); err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		ev, err := a.Parse(body)
		switch {
		case err != nil:
			t.Fatalf("%s: %v", tc.file, err)
		case tc.filtered != (ev.Answer != nil):
			t.Fatalf("%s in %v: answered without recording %v, want %v", tc.file, tc.environments, ev.Answer != nil, tc.filtered)
		case tc.filtered:
			continue
		}
		if r, err := a.Read(ev, body); err != nil || r.Ignore == "" || r.Subscription != "" {
			t.Fatalf("%s: read %+v %v, want stored and ignored", tc.file, r, err)
		}
		other, _ := appstore.New(appstore.Config{BundleID: "com.example.other", RootCerts: c.RootPEM(), Environments: tc.environments})
		if err := other.Verify(nil, body, time.Now()); err == nil {
			t.Fatalf("%s: verified for another app", tc.file)
		}
	}
}
