package playstore_test

// Google Play's pushes as Pub/Sub delivers them: whose token is Google's, what a push's
// fields may look like, and what forgeries cannot do.

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/playstore/playstoretest"
	"github.com/tollgate/tollgate/internal/billing/webhooks"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// Pushes whose token is not Google's for this push subscription are refused, and so is
// another app's notification; nothing is stored for any of them.
func TestPlayPushTokens(t *testing.T) {
	g := playstoretest.Start(t)
	h := billingtest.New(t, dbtest.SQLite(t), billingtest.WithPlayStore(t, g))
	g.SetPurchase("tok-auth", billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", "00000000-0000-4000-8000-000000000900", billingtest.Now.Add(time.Hour), ""))
	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	with := func(key string, value any) jwt.MapClaims {
		c := billingtest.PushClaims()
		c[key] = value
		return c
	}
	otherApp := playstoretest.Push("m-other", map[string]any{"packageName": "com.example.other", "eventTimeMillis": "1",
		"subscriptionNotification": map[string]any{"notificationType": 4, "purchaseToken": "tok-auth"}})
	for _, tc := range []struct {
		name  string
		token string
		body  []byte
	}{
		{"another audience", g.PushToken(with("aud", "https://elsewhere.example"), nil), billingtest.SubscriptionPush("m1", 4, "tok-auth")},
		{"another issuer", g.PushToken(with("iss", "https://evil.example"), nil), billingtest.SubscriptionPush("m1", 4, "tok-auth")},
		{"another service account", g.PushToken(with("email", "someone@example.com"), nil), billingtest.SubscriptionPush("m1", 4, "tok-auth")},
		{"an unverified email", g.PushToken(with("email_verified", false), nil), billingtest.SubscriptionPush("m1", 4, "tok-auth")},
		{"expired", g.PushToken(with("exp", billingtest.Now.Add(-time.Minute).Unix()), nil), billingtest.SubscriptionPush("m1", 4, "tok-auth")},
		{"signed by a stranger", g.PushToken(billingtest.PushClaims(), stranger), billingtest.SubscriptionPush("m1", 4, "tok-auth")},
		{"no token", "", billingtest.SubscriptionPush("m1", 4, "tok-auth")},
		{"another app", g.PushToken(billingtest.PushClaims(), nil), otherApp},
	} {
		if rec := h.SendPlay(tc.token, tc.body); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", tc.name, rec.Code)
		}
	}
	if n := h.CountEvents(); n != 0 {
		t.Fatalf("%d events stored by refused pushes", n)
	}
	if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m1", 4, "tok-auth")); rec.Code != http.StatusOK {
		t.Fatalf("Google's own push: %d %s", rec.Code, rec.Body)
	}
}

// Google types eventTimeMillis long and quotes it in its examples; as a JSON number it is
// the same value, and the push is applied.
func TestPlayNumericEventTime(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		g := playstoretest.Start(t)
		h := billingtest.New(t, d, billingtest.WithPlayStore(t, g))
		user := "00000000-0000-4000-8000-000000000990"
		g.SetPurchase("tok-numeric", billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", user, billingtest.Now.Add(24*time.Hour), "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"))
		for i, typ := range []int{4, 12} { // purchased, then revoked: a revocation is placed at its event time
			push := playstoretest.Push(fmt.Sprintf("m-numeric-%d", i), map[string]any{"version": "1.0", "packageName": billingtest.Bundle,
				"eventTimeMillis":          billingtest.Now.Add(time.Duration(i) * time.Minute).UnixMilli(),
				"subscriptionNotification": map[string]any{"version": "1.0", "notificationType": typ, "purchaseToken": "tok-numeric", "subscriptionId": "com.example.app.pro.monthly"}})
			h.SetNow(billingtest.Now.Add(time.Duration(i) * time.Minute))
			if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), push); rec.Code != http.StatusOK || rec.Header().Get(webhooks.HeaderOutcome) != billing.OutcomeApplied {
				t.Fatalf("type %d with a numeric eventTimeMillis: %d %q %s", typ, rec.Code, rec.Header().Get(webhooks.HeaderOutcome), rec.Body)
			}
		}
		if got := h.Answer(t, user); got != "false refunded free "+billingtest.Stamp(billingtest.Now.Add(time.Minute)) {
			t.Fatalf("after the revocation: %s", got)
		}
	})
}

// forgedPush is a push token naming a key Google never had, signed by a stranger.
func forgedPush(t *testing.T, kid string) string {
	t.Helper()
	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	token := jwt.NewWithClaims(jwt.SigningMethodRS256, billingtest.PushClaims())
	token.Header["kid"] = kid
	signed, err := token.SignedString(stranger)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

// Forged pushes naming unknown keys while Google's key endpoint hangs do not hold up a
// genuine push signed by a key already known; and however many forgeries come, Google's
// keys are fetched at most once a refetch interval, whether the fetch worked or not.
func TestPlayForgedPushesDoNotHoldUpGenuineOnes(t *testing.T) {
	g := playstoretest.Start(t)
	h := billingtest.New(t, dbtest.SQLite(t), billingtest.WithPlayStore(t, g))
	g.SetPurchase("tok-genuine", billingtest.PlayPurchase("SUBSCRIPTION_STATE_ACTIVE", "00000000-0000-4000-8000-000000000991", billingtest.Now.Add(time.Hour), "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"))
	if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-first", 4, "tok-genuine")); rec.Code != http.StatusOK {
		t.Fatalf("the first genuine push: %d", rec.Code)
	}
	if n := g.KeyRequests(); n != 1 {
		t.Fatalf("%d key fetches for the first push", n)
	}

	// A minute on, Google's key endpoint hangs and forgeries naming unknown keys arrive.
	h.SetNow(billingtest.Now.Add(time.Minute))
	g.HoldKeys(true)
	defer g.HoldKeys(false)
	var forged sync.WaitGroup
	for i := range 4 {
		forged.Add(1)
		go func() {
			defer forged.Done()
			if rec := h.SendPlay(forgedPush(t, fmt.Sprintf("nobody-%d", i)), billingtest.SubscriptionPush(fmt.Sprintf("m-forged-%d", i), 4, "tok-genuine")); rec.Code != http.StatusUnauthorized {
				t.Errorf("a forged push: %d", rec.Code)
			}
		}()
	}
	for deadline := time.Now().Add(5 * time.Second); g.KeyRequests() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the forgeries did not make tollgate fetch Google's keys")
		}
	}
	start := time.Now()
	rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), billingtest.SubscriptionPush("m-genuine", 4, "tok-genuine"))
	took := time.Since(start)
	if rec.Code != http.StatusOK || took > time.Second {
		t.Fatalf("a genuine push behind the forgeries: %d after %v, want 200 within a second", rec.Code, took)
	}
	t.Logf("a genuine push behind four forgeries and a hung key endpoint: 200 after %v", took)
	g.HoldKeys(false)
	forged.Wait()
	if n := g.KeyRequests(); n != 2 {
		t.Fatalf("%d key fetches for four forgeries at once, want one", n)
	}

	// A failed fetch counts as an attempt too: more forgeries within the interval fetch nothing.
	h.SetNow(billingtest.Now.Add(2 * time.Minute))
	g.SetKeysDown(true)
	for i := range 5 {
		if rec := h.SendPlay(forgedPush(t, fmt.Sprintf("again-%d", i)), billingtest.SubscriptionPush(fmt.Sprintf("m-again-%d", i), 4, "tok-genuine")); rec.Code != http.StatusUnauthorized {
			t.Fatalf("a forged push: %d", rec.Code)
		}
	}
	if n := g.KeyRequests(); n != 3 {
		t.Fatalf("%d key fetches after five forgeries with the endpoint failing, want one more (3)", n)
	}
}
