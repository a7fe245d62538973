package playdev_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/oauth2/google"
	"google.golang.org/api/androidpublisher/v3"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/tollgate/tollgate/internal/billing/playstore/playdev"
)

// standIn is the stand-in on a loopback port, and Google's own client signed in to it
// with a service account key it made.
func standIn(t *testing.T) (*playdev.Google, *androidpublisher.Service, string) {
	t.Helper()
	g, err := playdev.New(playdev.Config{Audience: "https://billing.example.test/billing/webhooks/playstore", ServiceAccount: "push@example.iam.gserviceaccount.com"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	key, err := playdev.ServiceAccountJSON(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	creds, err := google.CredentialsFromJSON(ctx, key, androidpublisher.AndroidpublisherScope)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := androidpublisher.NewService(ctx, option.WithTokenSource(creds.TokenSource), option.WithEndpoint(srv.URL+"/"))
	if err != nil {
		t.Fatal(err)
	}
	return g, svc, srv.URL
}

// TestGoogleClientsReadWhatTheStandInKnows: Google's own client, signed in with the
// stand-in's service account key, reads a purchase it was told of, gets 404 for one it was
// not, and is refused without a token.
func TestGoogleClientsReadWhatTheStandInKnows(t *testing.T) {
	t.Parallel()
	g, svc, base := standIn(t)
	g.SetPurchase("tok-1", &androidpublisher.SubscriptionPurchaseV2{SubscriptionState: "SUBSCRIPTION_STATE_ACTIVE", RegionCode: "FR"})
	got, err := svc.Purchases.Subscriptionsv2.Get("com.example.app", "tok-1").Do()
	if err != nil || got.SubscriptionState != "SUBSCRIPTION_STATE_ACTIVE" || got.RegionCode != "FR" {
		t.Fatalf("a known purchase: %+v %v", got, err)
	}
	var apiErr *googleapi.Error
	if _, err := svc.Purchases.Subscriptionsv2.Get("com.example.app", "tok-unknown").Do(); !errors.As(err, &apiErr) || apiErr.Code != http.StatusNotFound {
		t.Fatalf("an unknown purchase: %v", err)
	}
	resp, err := http.Get(base + "/androidpublisher/v3/applications/com.example.app/purchases/subscriptionsv2/tokens/tok-1")
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a token: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestVoidedPurchasesAsGoogleKeepsThem: the voided list answers the voids in the window,
// paged; a start older than Google's 30 days is refused with 400.
func TestVoidedPurchasesAsGoogleKeepsThem(t *testing.T) {
	t.Parallel()
	g, svc, _ := standIn(t)
	now := time.Now()
	g.Clock = func() time.Time { return now }
	for i, order := range []string{"GPA.1", "GPA.2", "GPA.3"} {
		g.Void(androidpublisher.VoidedPurchase{PurchaseToken: "tok-" + order, OrderId: order, VoidedTimeMillis: now.Add(time.Duration(i-3) * time.Hour).UnixMilli()})
	}
	g.Void(androidpublisher.VoidedPurchase{PurchaseToken: "tok-old", OrderId: "GPA.old", VoidedTimeMillis: now.Add(-20 * 24 * time.Hour).UnixMilli()})
	var orders []string
	pages, page := 0, ""
	for {
		call := svc.Purchases.Voidedpurchases.List("com.example.app").StartTime(now.Add(-24 * time.Hour).UnixMilli()).EndTime(now.UnixMilli())
		if page != "" {
			call = call.Token(page)
		}
		list, err := call.Do()
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, v := range list.VoidedPurchases {
			orders = append(orders, v.OrderId)
		}
		if list.TokenPagination == nil || list.TokenPagination.NextPageToken == "" {
			break
		}
		page = list.TokenPagination.NextPageToken
	}
	var err error
	if pages != 2 || len(orders) != 3 || orders[0] != "GPA.1" || orders[2] != "GPA.3" {
		t.Fatalf("voids of the last day: %v in %d pages", orders, pages)
	}
	var apiErr *googleapi.Error
	_, err = svc.Purchases.Voidedpurchases.List("com.example.app").StartTime(now.Add(-31 * 24 * time.Hour).UnixMilli()).Do()
	if !errors.As(err, &apiErr) || apiErr.Code != http.StatusBadRequest {
		t.Fatalf("a start 31 days back: %v", err)
	}
}
