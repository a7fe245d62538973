package config

import (
	"net/url"
	"slices"
)

// AppStore is the App Store provider's configuration.
type AppStore struct {
	// BundleID (APPSTORE_BUNDLE_ID) turns the provider on: notifications for any other app
	// are refused.
	BundleID string
	// RootCerts (APPSTORE_ROOT_CERTS) is a PEM file whose certificates replace Apple Root
	// CA - G3 as the pinned roots; empty keeps Apple's.
	RootCerts string
	// Environments (APPSTORE_ENVIRONMENTS) are those whose notifications are applied.
	Environments []string
	// TestChain (APPSTORE_TEST_CHAIN) is where `webhook send --provider appstore` keeps the
	// local chain it signs with.
	TestChain string
	// KeyID (APPSTORE_KEY_ID), IssuerID (APPSTORE_ISSUER_ID) and PrivateKeyFile
	// (APPSTORE_PRIVATE_KEY_FILE, the .p8) are an In-App Purchase key from App Store Connect:
	// with all three, tollgate reads the App Store Server API. APIBase (APPSTORE_API_BASE)
	// replaces the API's URL (a stand-in's).
	KeyID, IssuerID, PrivateKeyFile, APIBase string
}

// APIOn says whether the App Store Server API is read: the provider is on and its key set.
func (s AppStore) APIOn() bool { return s.BundleID != "" && s.KeyID != "" }

func loadAppStore(get func(name, def string) string, fail func(name, format string, args ...any)) AppStore {
	s := AppStore{BundleID: get("APPSTORE_BUNDLE_ID", ""), RootCerts: get("APPSTORE_ROOT_CERTS", ""),
		TestChain: get("APPSTORE_TEST_CHAIN", ".tollgate/appstore-test-chain.pem")}
	s.KeyID, s.IssuerID, s.PrivateKeyFile = get("APPSTORE_KEY_ID", ""), get("APPSTORE_ISSUER_ID", ""), get("APPSTORE_PRIVATE_KEY_FILE", "")
	s.APIBase = get("APPSTORE_API_BASE", "")
	key := map[string]string{"APPSTORE_KEY_ID": s.KeyID, "APPSTORE_ISSUER_ID": s.IssuerID, "APPSTORE_PRIVATE_KEY_FILE": s.PrivateKeyFile}
	if set := countSet(key); set > 0 && set < len(key) {
		for name, value := range key {
			if value == "" {
				fail(name, "is required with the other App Store key settings (APPSTORE_KEY_ID, APPSTORE_ISSUER_ID, APPSTORE_PRIVATE_KEY_FILE: all three or none)")
			}
		}
	}
	if s.APIBase != "" {
		if u, err := url.Parse(s.APIBase); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			fail("APPSTORE_API_BASE", "want an http(s) URL, got %q", s.APIBase)
		}
	}
	for _, env := range splitList(get("APPSTORE_ENVIRONMENTS", "Production")) {
		if !slices.Contains([]string{"Production", "Sandbox"}, env) { // where notifications come from
			fail("APPSTORE_ENVIRONMENTS", "want Production, Sandbox or both (comma-separated), got %q", env)
			continue
		}
		s.Environments = append(s.Environments, env)
	}
	return s
}

// PlayStore is the Google Play provider's configuration.
type PlayStore struct {
	// PackageName (PLAY_PACKAGE_NAME) turns the provider on: notifications for any other
	// app are refused.
	PackageName string
	// PushAudience (PLAY_PUSH_AUDIENCE) and PushServiceAccount (PLAY_PUSH_SERVICE_ACCOUNT)
	// are what the push subscription's OIDC tokens must name; PushJWKSURL
	// (PLAY_PUSH_JWKS_URL) serves their keys.
	PushAudience, PushServiceAccount, PushJWKSURL string
	// ServiceAccountJSON (PLAY_SERVICE_ACCOUNT_JSON) is the path of the key of the service
	// account that reads purchases; APIBase (PLAY_API_BASE) the Developer API's base URL.
	ServiceAccountJSON, APIBase string
	// Dev: Google Play is heard through tollgate's own stand-in for Google under
	// /_dev/play, so that it can be tried with no Google account. Only in development, with
	// PLAY_PACKAGE_NAME unset and a loopback ADDR.
	Dev bool
}

// devPlayPackage and devPlayPusher are the app and the push service account of the
// development stand-in for Google Play.
const (
	devPlayPackage = "com.example.app"
	devPlayPusher  = "pubsub-push@tollgate-dev.iam.gserviceaccount.com"
)

// devPlayStore is Google Play through the development stand-in at publicURL.
func devPlayStore(publicURL, billingMount string) PlayStore {
	base := publicURL + DevPlayPath
	return PlayStore{Dev: true, PackageName: devPlayPackage, PushAudience: publicURL + "/" + billingMount + "/webhooks/playstore",
		PushServiceAccount: devPlayPusher, PushJWKSURL: base + "/certs", APIBase: base + "/"}
}

func loadPlayStore(get func(name, def string) string, fail func(name, format string, args ...any)) PlayStore {
	s := PlayStore{
		PackageName: get("PLAY_PACKAGE_NAME", ""), PushAudience: get("PLAY_PUSH_AUDIENCE", ""),
		PushServiceAccount: get("PLAY_PUSH_SERVICE_ACCOUNT", ""), PushJWKSURL: get("PLAY_PUSH_JWKS_URL", "https://www.googleapis.com/oauth2/v3/certs"),
		ServiceAccountJSON: get("PLAY_SERVICE_ACCOUNT_JSON", ""), APIBase: get("PLAY_API_BASE", "https://androidpublisher.googleapis.com/"),
	}
	for name, value := range map[string]string{"PLAY_PUSH_JWKS_URL": s.PushJWKSURL, "PLAY_API_BASE": s.APIBase} {
		if u, err := url.Parse(value); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			fail(name, "want an http(s) URL, got %q", value)
		}
	}
	if s.PackageName == "" {
		return s
	}
	for name, value := range map[string]string{
		"PLAY_PUSH_AUDIENCE": s.PushAudience, "PLAY_PUSH_SERVICE_ACCOUNT": s.PushServiceAccount, "PLAY_SERVICE_ACCOUNT_JSON": s.ServiceAccountJSON,
	} {
		if value == "" {
			fail(name, "is required with PLAY_PACKAGE_NAME")
		}
	}
	return s
}

// countSet is how many of the values are set.
func countSet(values map[string]string) int {
	n := 0
	for _, v := range values {
		if v != "" {
			n++
		}
	}
	return n
}
