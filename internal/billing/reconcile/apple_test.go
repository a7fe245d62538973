package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoretest"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// appleStores are stand-ins of the App Store Server API, one per environment, sharing one
// chain; the adapter applies every one of them, and each has a client.
type appleStores struct {
	h       *billingtest.Harness
	stands  map[string]*appstoretest.API
	clients []*appstore.API
}

func newAppleStores(t *testing.T, environments ...string) *appleStores {
	t.Helper()
	chain := billingtest.NewChain(t)
	a, err := appstore.New(appstore.Config{BundleID: billingtest.Bundle, RootCerts: chain.RootPEM(), Environments: environments})
	if err != nil {
		t.Fatal(err)
	}
	s := &appleStores{h: billingtest.New(t, dbtest.SQLite(t), billingtest.WithAdapters(a)), stands: map[string]*appstoretest.API{}}
	for _, env := range environments {
		stand, err := appstoretest.New(chain, billingtest.Bundle, env)
		if err != nil {
			t.Fatal(err)
		}
		stand.Clock = func() time.Time { return billingtest.Now }
		srv := httptest.NewServer(stand.Handler())
		t.Cleanup(srv.Close)
		api, err := a.API(appstore.APIConfig{KeyID: stand.KeyID, IssuerID: stand.IssuerID, PrivateKey: stand.PrivateKeyPEM, Environment: env,
			BaseURL: srv.URL, Backoff: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		s.stands[env], s.clients = stand, append(s.clients, api)
	}
	return s
}

// subscribe delivers a subscription of sub for its own user in environment, and makes the
// stand-in's status of it code.
func (s *appleStores) subscribe(t *testing.T, environment, sub string, code int) {
	t.Helper()
	n := billingtest.AppStoreNotification("n-"+sub, "SUBSCRIBED", "INITIAL_BUY", sub, userFor(sub), billingtest.Now.Add(-3*time.Hour), billingtest.Now.Add(30*24*time.Hour))
	n.Environment = environment
	stand := s.stands[environment]
	if rec := s.h.SendAppStore(stand.Chain, n); rec.Code != http.StatusOK {
		t.Fatalf("%s: %d %s", sub, rec.Code, rec.Body)
	}
	tx := *n.Transaction
	if code == appstore.StatusExpired {
		tx.Expires = billingtest.Now.Add(-time.Hour)
	}
	if err := stand.SetStatus(appstoredev.Status{Code: code, Signed: billingtest.Now, Transaction: tx}); err != nil {
		t.Fatal(err)
	}
}

func userFor(sub string) string { return "00000000-0000-4000-8000-00000" + sub }

func (s *appleStores) reconciler() *reconcile.Reconciler {
	statuses := make([]reconcile.Environment, 0, len(s.clients))
	for _, api := range s.clients {
		statuses = append(statuses, reconcile.Environment{Name: api.Environment(),
			Read: func(ctx context.Context, id string, _ []byte) (json.RawMessage, error) {
				return api.ReadSubscription(ctx, id)
			},
			NotHere: func(err error) bool { return errors.Is(err, appstore.ErrUnknownSubscription) }})
	}
	read := reconcile.Environments(statuses, func(id string) (json.RawMessage, error) {
		return json.Marshal(appstore.SubscriptionStatus{OriginalTransactionID: id})
	})
	return reconcile.New(s.h.DB, s.h.Svc.Pipeline, s.h.Log, reconcile.Options{Provider: appstore.Provider, Clock: s.h.Clock,
		Read: reconcile.KnownSubscriptions(s.h.DB, appstore.Provider, s.h.Clock, read)})
}

// TestApplesAnswersAreReadAsAppleDefinesThem, through a whole pass each.
func TestApplesAnswersAreReadAsAppleDefinesThem(t *testing.T) {
	t.Parallel()
	t.Run("one subscription that always fails is passed by", func(t *testing.T) {
		t.Parallel()
		s := newAppleStores(t, "Production")
		for _, sub := range []string{"9100001", "9100002", "9100003", "9100004", "9100005"} {
			s.subscribe(t, "Production", sub, appstore.StatusExpired)
		}
		s.stands["Production"].FailSubscription("9100002", true, appstoretest.Fault{Status: 500, Code: 5000000})
		res, err := s.reconciler().Pass(context.Background(), false)
		if err != nil || res.Checked != 4 || res.Failed != 1 || res.Repaired != 4 {
			t.Fatalf("%+v %v: want the other four checked and repaired, one failed", res, err)
		}
		if got := s.h.Answer(t, userFor("9100005")); !strings.HasPrefix(got, "false expired") {
			t.Fatalf("the last subscription after the failing one: %s", got)
		}
		if !strings.Contains(s.h.Logs.String(), "subscription=9100002") {
			t.Fatalf("the failed read is not logged:\n%s", s.h.Logs.String())
		}
	})
	t.Run("not found, try again, then expired", func(t *testing.T) {
		t.Parallel()
		s := newAppleStores(t, "Production")
		s.subscribe(t, "Production", "9100011", appstore.StatusExpired)
		s.stands["Production"].FailSubscription("9100011", false, appstoretest.Fault{Status: 404, Code: 4040006})
		res, err := s.reconciler().Pass(context.Background(), false)
		if err != nil || res.Checked != 1 || res.Repaired != 1 || res.Unresolved != 0 || res.Failed != 0 {
			t.Fatalf("%+v %v", res, err)
		}
		if got := s.h.Answer(t, userFor("9100011")); !strings.HasPrefix(got, "false expired") {
			t.Fatalf("after the pass: %s, want expired", got)
		}
	})
	t.Run("not found, try again, for ever: left for the next pass", func(t *testing.T) {
		t.Parallel()
		s := newAppleStores(t, "Production")
		s.subscribe(t, "Production", "9100021", appstore.StatusExpired)
		s.subscribe(t, "Production", "9100022", appstore.StatusExpired)
		s.stands["Production"].FailSubscription("9100021", true, appstoretest.Fault{Status: 404, Code: 4040002})
		res, err := s.reconciler().Pass(context.Background(), false)
		if err != nil || res.Checked != 1 || res.Failed != 1 || res.Unresolved != 0 {
			t.Fatalf("%+v %v: want one failed, not unresolved", res, err)
		}
	})
	t.Run("app not found fails the pass", func(t *testing.T) {
		t.Parallel()
		s := newAppleStores(t, "Production")
		s.subscribe(t, "Production", "9100031", appstore.StatusActive)
		s.subscribe(t, "Production", "9100032", appstore.StatusActive)
		for _, sub := range []string{"9100031", "9100032"} {
			s.stands["Production"].FailSubscription(sub, true, appstoretest.Fault{Status: 404, Code: 4040003})
		}
		_, err := s.reconciler().Pass(context.Background(), false)
		if err == nil || !strings.Contains(err.Error(), "APPSTORE_BUNDLE_ID") || !strings.Contains(err.Error(), "Production") {
			t.Fatalf("every read 4040003: %v, want the pass failed naming APPSTORE_BUNDLE_ID and the environment", err)
		}
		var recorded string
		if err := s.h.DB.QueryRow("select error from reconcile_runs").Scan(&recorded); err != nil || !strings.Contains(recorded, "APPSTORE_BUNDLE_ID") {
			t.Fatalf("the run's record: %q %v", recorded, err)
		}
	})
	t.Run("Production refuses the key, Sandbox serves", func(t *testing.T) {
		t.Parallel()
		s := newAppleStores(t, "Production", "Sandbox")
		s.subscribe(t, "Sandbox", "9100041", appstore.StatusExpired)
		s.subscribe(t, "Sandbox", "9100042", appstore.StatusExpired)
		s.stands["Production"].RefuseKeys(true)
		res, err := s.reconciler().Pass(context.Background(), false)
		if err != nil || res.Checked != 2 || res.Repaired != 2 || !strings.Contains(res.Notes, "Production") || !strings.Contains(res.Notes, "401") {
			t.Fatalf("%+v %v: want the Sandbox subscriptions reconciled and Production's refusal noted", res, err)
		}
		if at, _ := s.stands["Production"].Requests(); len(at) != 1 {
			t.Fatalf("Production was asked %d times, want once in the pass", len(at))
		}
		var notes string
		if err := s.h.DB.QueryRow("select notes from reconcile_runs").Scan(&notes); err != nil || !strings.Contains(notes, "Production") {
			t.Fatalf("the run's notes: %q %v", notes, err)
		}
	})
}

// TestEachAppleRequestHasItsOwnToken: two requests carry two different JWTs, each
// valid for at most an hour (Apple refuses more).
func TestEachAppleRequestHasItsOwnToken(t *testing.T) {
	t.Parallel()
	s := newAppleStores(t, "Production")
	s.subscribe(t, "Production", "9100051", appstore.StatusActive)
	for range 2 {
		if _, err := s.clients[0].SubscriptionStatus(context.Background(), "9100051"); err != nil {
			t.Fatal(err)
		}
	}
	tokens := s.stands["Production"].Tokens()
	if len(tokens) != 2 || tokens[0] == tokens[1] {
		t.Fatalf("tokens %d, the same twice: %v", len(tokens), len(tokens) == 2 && tokens[0] == tokens[1])
	}
	for _, raw := range tokens {
		claims := jwt.MapClaims{}
		if _, _, err := jwt.NewParser().ParseUnverified(raw, claims); err != nil {
			t.Fatal(err)
		}
		iat, _ := claims.GetIssuedAt()
		exp, _ := claims.GetExpirationTime()
		if iat == nil || exp == nil || exp.Sub(iat.Time) > time.Hour {
			t.Fatalf("a token's iat %v and exp %v", iat, exp)
		}
	}
}
