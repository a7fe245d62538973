package config

import "slices"

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
}

func loadAppStore(get func(name, def string) string, fail func(name, format string, args ...any)) AppStore {
	s := AppStore{BundleID: get("APPSTORE_BUNDLE_ID", ""), RootCerts: get("APPSTORE_ROOT_CERTS", "")}
	for _, env := range splitList(get("APPSTORE_ENVIRONMENTS", "Production")) {
		if !slices.Contains([]string{"Production", "Sandbox"}, env) { // where notifications come from
			fail("APPSTORE_ENVIRONMENTS", "want Production, Sandbox or both (comma-separated), got %q", env)
			continue
		}
		s.Environments = append(s.Environments, env)
	}
	return s
}
