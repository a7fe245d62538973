package billingtest

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoretest"
)

// Bundle is the app's bundle id and Play package name in every store test.
const Bundle = "com.example.app"

// WithAppStore adds the App Store, pinned to chain's root.
func WithAppStore(t testing.TB, chain *appstoredev.Chain) Option {
	return WithAdapters(appStoreAdapter(t, chain))
}

// appStoreAdapter is the App Store's adapter for the app, in Production, pinned to chain's root.
func appStoreAdapter(t testing.TB, chain *appstoredev.Chain, environments ...string) *appstore.Adapter {
	t.Helper()
	if len(environments) == 0 {
		environments = []string{"Production"}
	}
	a, err := appstore.New(appstore.Config{BundleID: Bundle, RootCerts: chain.RootPEM(), Environments: environments})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// NewChain is a fresh local App Store signing chain.
func NewChain(t testing.TB) *appstoredev.Chain {
	c, err := appstoredev.New(appstoredev.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// SendAppStore delivers n signed by c to the App Store route.
func (h *Harness) SendAppStore(c *appstoredev.Chain, n appstoredev.Notification) *httptest.ResponseRecorder {
	h.T.Helper()
	body, err := c.Body(n)
	if err != nil {
		h.T.Fatal(err)
	}
	return h.Post("/billing/webhooks/appstore", body, nil)
}

// AppStoreNotification is a notification of type about subscription sub of user, signed
// at signed, whose transaction expires at expires.
func AppStoreNotification(id, typ, subtype, sub, user string, signed, expires time.Time) appstoredev.Notification {
	return appstoredev.Notification{
		UUID: id, Type: typ, Subtype: subtype, BundleID: Bundle, Signed: signed,
		Transaction: &appstoredev.Transaction{
			OriginalTransactionID: sub, TransactionID: sub + "-" + id, BundleID: Bundle, ProductID: "com.example.app.pro.monthly",
			AppAccountToken: user, Expires: expires, Price: 9990, Currency: "USD",
		},
	}
}

// AppStoreAPI is the App Store's stand-in for its server API on a loopback port, the
// adapter pinned to its chain (add it with WithAdapters), and a client of the API with the
// stand-in's key, in Production.
func AppStoreAPI(t testing.TB) (*appstoretest.API, *appstore.Adapter, *appstore.API) {
	return AppStoreAPIIn(t, "Production")
}

// AppStoreAPIIn is AppStoreAPI in environment (Production or Sandbox): the stand-in's
// history, the adapter's applied environment and the client's. The stand-in measures its
// history window from Now; a client's retries wait a millisecond, doubling.
func AppStoreAPIIn(t testing.TB, environment string) (*appstoretest.API, *appstore.Adapter, *appstore.API) {
	t.Helper()
	chain := NewChain(t)
	a := appStoreAdapter(t, chain, environment)
	s, err := appstoretest.New(chain, Bundle, environment)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	s.Clock = func() time.Time { return Now }
	api, err := a.API(appstore.APIConfig{KeyID: s.KeyID, IssuerID: s.IssuerID, PrivateKey: s.PrivateKeyPEM, Environment: environment,
		BaseURL: srv.URL, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return s, a, api
}
