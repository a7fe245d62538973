package billingtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/api/androidpublisher/v3"

	"github.com/tollgate/tollgate/internal/billing/playstore"
	"github.com/tollgate/tollgate/internal/billing/playstore/playstoretest"
)

const (
	PlayAudience = "https://tollgate.example.test/billing/webhooks/playstore"
	PlayPusher   = "pubsub-push@tollgate-test.iam.gserviceaccount.com"
)

// WithPlayStore adds Google Play, reaching Google's stand-in g.
func WithPlayStore(t testing.TB, g *playstoretest.Google) Option {
	return WithAdapters(PlayAdapter(t, g))
}

// PlayAdapter is Google Play's adapter, reaching Google's stand-in g.
func PlayAdapter(t testing.TB, g *playstoretest.Google) *playstore.Adapter {
	t.Helper()
	g.Clock = func() time.Time { return Now } // the voided list's window is measured from the harness's now
	a, err := playstore.New(context.Background(), playstore.Config{
		PackageName: Bundle, PushAudience: PlayAudience, PushServiceAccount: PlayPusher, PushJWKSURL: g.JWKSURL(),
		ServiceAccountJSON: g.ServiceAccountJSON(), APIBase: g.URL + "/", Backoff: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// PushClaims are a valid push token's claims at Now.
func PushClaims() jwt.MapClaims {
	return jwt.MapClaims{"iss": "https://accounts.google.com", "aud": PlayAudience, "email": PlayPusher, "email_verified": true,
		"sub": "1234", "iat": Now.Unix(), "exp": Now.Add(time.Hour).Unix()}
}

// SendPlay delivers a push to the Google Play route with token as its bearer.
func (h *Harness) SendPlay(token string, body []byte) *httptest.ResponseRecorder {
	h.T.Helper()
	return h.Post("/billing/webhooks/playstore", body, http.Header{"Authorization": {"Bearer " + token}})
}

// SubscriptionPush is a subscription notification of type for purchaseToken.
func SubscriptionPush(messageID string, notificationType int, purchaseToken string) []byte {
	return playstoretest.Push(messageID, map[string]any{
		"version": "1.0", "packageName": Bundle, "eventTimeMillis": fmt.Sprint(Now.UnixMilli()),
		"subscriptionNotification": map[string]any{"version": "1.0", "notificationType": notificationType,
			"purchaseToken": purchaseToken, "subscriptionId": "com.example.app.pro.monthly"},
	})
}

// PlayPurchase is a subscription purchase of pro monthly in state, for user, until expiry.
func PlayPurchase(state, user string, expiry time.Time, ack string) *androidpublisher.SubscriptionPurchaseV2 {
	return &androidpublisher.SubscriptionPurchaseV2{
		SubscriptionState: state, AcknowledgementState: ack, StartTime: Now.Add(-time.Hour).Format(time.RFC3339),
		ExternalAccountIdentifiers: &androidpublisher.ExternalAccountIdentifiers{ObfuscatedExternalAccountId: user},
		LineItems:                  []*androidpublisher.SubscriptionPurchaseLineItem{{ProductId: "com.example.app.pro.monthly", ExpiryTime: expiry.Format(time.RFC3339)}},
	}
}

// PlayOrder is PlayPurchase paid by order (the line item's latestSuccessfulOrderId).
func PlayOrder(state, user string, expiry time.Time, order string) *androidpublisher.SubscriptionPurchaseV2 {
	p := PlayPurchase(state, user, expiry, "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
	p.LineItems[0].LatestSuccessfulOrderId = order
	return p
}
