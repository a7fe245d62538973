package appstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoretest"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
)

// standIn is the App Store Server API's stand-in on a loopback port, and a client of it
// with the stand-in's key.
func standIn(t *testing.T) (*appstoretest.API, *appstore.API) {
	t.Helper()
	s, _, api := billingtest.AppStoreAPI(t)
	return s, api
}

func client(t *testing.T, chain *appstoredev.Chain, s *appstoretest.API, base string, p8 []byte, pace float64) *appstore.API {
	t.Helper()
	a, err := appstore.New(appstore.Config{BundleID: billingtest.Bundle, RootCerts: chain.RootPEM(), Environments: []string{"Production"}})
	if err != nil {
		t.Fatal(err)
	}
	api, err := a.API(appstore.APIConfig{KeyID: s.KeyID, IssuerID: s.IssuerID, PrivateKey: p8, Environment: "Production", BaseURL: base, Pace: pace})
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// The history is read page by page; each item is verified as a delivered notification is,
// and one that is forged, of another app or of another environment is left out, saying why.
func TestAPIHistoryIsVerifiedLikeANotification(t *testing.T) {
	s, api := standIn(t)
	start := billingtest.Now.Add(-24 * time.Hour)
	for i := range 45 {
		n := billingtest.AppStoreNotification(fmt.Sprintf("history-%02d", i), "DID_RENEW", "", "9000001", billingtest.FixtureUser,
			start.Add(time.Duration(i)*time.Minute), billingtest.Now.Add(30*24*time.Hour))
		if _, err := s.Send(n); err != nil {
			t.Fatal(err)
		}
	}
	forger := billingtest.NewChain(t)
	forged, err := forger.SignedPayload(billingtest.AppStoreNotification("forged", "REFUND", "", "9000001", billingtest.FixtureUser, start, start))
	if err != nil {
		t.Fatal(err)
	}
	s.AddHistory(forged)
	otherApp := billingtest.AppStoreNotification("other-app", "DID_RENEW", "", "9000002", billingtest.FixtureUser, start, start)
	otherApp.BundleID, otherApp.Transaction.BundleID = "com.example.other", "com.example.other"
	sandbox := billingtest.AppStoreNotification("sandbox", "DID_RENEW", "", "9000003", billingtest.FixtureUser, start, start)
	sandbox.Environment = "Sandbox"
	for _, n := range []appstoredev.Notification{otherApp, sandbox} {
		payload, err := s.Chain.SignedPayload(n)
		if err != nil {
			t.Fatal(err)
		}
		s.AddHistory(payload)
	}

	var uuids []string
	var refused []error
	pages := 0
	for token := ""; ; {
		page, err := api.NotificationHistory(context.Background(), start, billingtest.Now, token)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, item := range page.Events {
			uuids = append(uuids, item.ID)
			if !strings.Contains(string(item.Body), `"signedPayload"`) || item.At.Before(start) {
				t.Errorf("item %s: %s at %v", item.ID, item.Body, item.At)
			}
		}
		refused = append(refused, page.Refused...)
		if token = page.Next; token == "" {
			break
		}
	}
	if len(uuids) != 45 || uuids[0] != "history-00" || uuids[44] != "history-44" || pages != 3 {
		t.Fatalf("%d items in %d pages (%v … ), want 45 in 3", len(uuids), pages, uuids[:min(3, len(uuids))])
	}
	if len(refused) != 3 {
		t.Fatalf("refused %v, want the forged, the other app's and the Sandbox notification", refused)
	}
	for _, want := range []string{"pinned root", "another app", "another environment"} {
		if !strings.Contains(fmt.Sprint(refused), want) {
			t.Errorf("no refusal says %q: %v", want, refused)
		}
	}
	if _, refusals := s.Requests(); len(refusals) != 0 {
		t.Fatalf("the stand-in refused tokens: %v", refusals)
	}
}

// A token signed with another key is refused with a 401, which ends the read at once,
// naming the settings to check, and is not retried.
func TestAPIKeyRefusedIsNotRetried(t *testing.T) {
	chain := billingtest.NewChain(t)
	s, err := appstoretest.New(chain, billingtest.Bundle, "Production")
	if err != nil {
		t.Fatal(err)
	}
	other, err := appstoretest.New(chain, billingtest.Bundle, "Production")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	api := client(t, chain, s, srv.URL, other.PrivateKeyPEM, 0)
	_, err = api.NotificationHistory(context.Background(), billingtest.Now.Add(-time.Hour), billingtest.Now, "")
	if !errors.Is(err, appstore.ErrAPIKeyRefused) || !strings.Contains(err.Error(), "APPSTORE_PRIVATE_KEY_FILE") {
		t.Fatalf("a wrong key: %v", err)
	}
	if at, refusals := s.Requests(); len(at) != 1 || len(refusals) != 1 || !strings.Contains(refusals[0], "signature") {
		t.Fatalf("%d requests, refusals %v: want one, refused for its signature", len(at), refusals)
	}
}

// A 429 waits until the moment its Retry-After names (UNIX milliseconds), or else backs
// off; the read then completes.
func TestAPIWaitsOutA429(t *testing.T) {
	s, _ := standIn(t)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	api := client(t, s.Chain, s, srv.URL, s.PrivateKeyPEM, 0) // the default backoff: a second
	// To the millisecond, as Retry-After names it.
	retryAt := time.Now().Add(1200 * time.Millisecond).Truncate(time.Millisecond)
	s.Throttle(time.Time{}) // no Retry-After: a backoff of a second
	s.Throttle(retryAt)
	if _, err := s.Send(billingtest.AppStoreNotification("after-429", "DID_RENEW", "", "9000004", billingtest.FixtureUser, billingtest.Now, billingtest.Now)); err != nil {
		t.Fatal(err)
	}
	page, err := api.NotificationHistory(context.Background(), billingtest.Now.Add(-time.Hour), billingtest.Now, "")
	if err != nil || len(page.Events) != 1 {
		t.Fatalf("after two 429s: %v, %d items", err, len(page.Events))
	}
	if now := time.Now(); now.Before(retryAt) {
		t.Fatalf("answered at %v: before the Retry-After of %v", now, retryAt)
	}
	at, _ := s.Requests()
	if len(at) != 3 || at[1].Sub(at[0]) < time.Second || at[2].Before(retryAt) {
		t.Fatalf("requests at %v: want three, the second a backoff of a second after the first, the third after %v", at, retryAt)
	}
}

// Get All Subscription Statuses gives the status of the original transaction asked for,
// its items verified; one Apple answers 404 for is unknown.
func TestAPISubscriptionStatus(t *testing.T) {
	s, api := standIn(t)
	err := s.SetStatus(appstoredev.Status{Transaction: appstoredev.Transaction{OriginalTransactionID: "9000005", TransactionID: "9000006",
		BundleID: billingtest.Bundle, ProductID: "com.example.app.pro.monthly", Expires: billingtest.Now.Add(24 * time.Hour)},
		Code: appstore.StatusGracePeriod, Signed: billingtest.Now, AutoRenew: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := api.SubscriptionStatus(context.Background(), "9000005")
	if err != nil || got.Status != appstore.StatusGracePeriod || got.OriginalTransactionID != "9000005" {
		t.Fatalf("status: %+v %v", got, err)
	}
	if _, err := api.SubscriptionStatus(context.Background(), "404404"); !errors.Is(err, appstore.ErrUnknownSubscription) {
		t.Fatalf("an unknown transaction: %v", err)
	}
}

// The client paces its requests: never more than RECONCILE_PACE a second, nor the store's
// own limit.
func TestAPIPacesItsRequests(t *testing.T) {
	chain := billingtest.NewChain(t)
	s, err := appstoretest.New(chain, billingtest.Bundle, "Production")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	api := client(t, chain, s, srv.URL, s.PrivateKeyPEM, 20)
	for range 5 {
		if _, err := api.NotificationHistory(context.Background(), billingtest.Now.Add(-time.Hour), billingtest.Now, ""); err != nil {
			t.Fatal(err)
		}
	}
	at, _ := s.Requests()
	if len(at) != 5 || at[4].Sub(at[0]) < 4*50*time.Millisecond*9/10 {
		t.Fatalf("5 requests in %v, want 20 a second at most", at[len(at)-1].Sub(at[0]))
	}
}

// The stand-in refuses a history's dates as Apple does, and the client reads each refusal
// by its code: too far back (4000012) is billing.ErrHistoryStartTooOld.
func TestAPIHistoryDatesAreRefusedAsAppleRefusesThem(t *testing.T) {
	_, api := standIn(t)
	day := 24 * time.Hour
	for _, c := range []struct {
		name       string
		start, end time.Time
		code       int64
	}{
		{"181 days back", billingtest.Now.Add(-181 * day), billingtest.Now, 4000012},
		{"start after end", billingtest.Now.Add(-time.Hour), billingtest.Now.Add(-2 * time.Hour), 4000013},
		{"start in the future", billingtest.Now.Add(time.Hour), billingtest.Now.Add(2 * time.Hour), 4000015},
		{"no end", billingtest.Now.Add(-time.Hour), time.UnixMilli(0), 4000016},
	} {
		_, err := api.NotificationHistory(context.Background(), c.start, c.end, "")
		var apiErr *appstore.APIError
		if !errors.As(err, &apiErr) || apiErr.Code != c.code || errors.Is(err, billing.ErrHistoryStartTooOld) != (c.code == 4000012) {
			t.Errorf("%s: %v, want errorCode %d", c.name, err, c.code)
		}
	}
	if _, err := api.NotificationHistory(context.Background(), billingtest.Now.Add(-179*day), billingtest.Now, ""); err != nil {
		t.Fatalf("179 days back: %v", err)
	}
}
