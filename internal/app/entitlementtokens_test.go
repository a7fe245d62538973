package app

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate/tollgate/entitlementtoken"
	"github.com/tollgate/tollgate/internal/identity"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
)

// minted is an entitlement token as the API answers it.
type minted struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// mintToken POSTs to path with authorization and answers the token; status is what came
// back when it is not 200.
func mintToken(t *testing.T, base, path, authorization string) (minted, int) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, nil)
	req.Header.Set("Authorization", authorization)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m minted
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
	}
	return m, resp.StatusCode
}

// standardKeyfunc is what any backend with a standard JWT library does: the key of the
// token's kid, read from the key set at jwksURL alone.
func standardKeyfunc(t *testing.T, jwksURL string) jwt.Keyfunc {
	return func(token *jwt.Token) (any, error) {
		resp, err := http.Get(jwksURL)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var set struct {
			Keys []struct{ Kid, Kty, Crv, X, Y string }
		}
		if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
			return nil, err
		}
		for _, k := range set.Keys {
			if k.Kid == token.Header["kid"] {
				x, _ := base64.RawURLEncoding.DecodeString(k.X)
				y, _ := base64.RawURLEncoding.DecodeString(k.Y)
				return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
			}
		}
		return nil, fmt.Errorf("no key %v in the set", token.Header["kid"])
	}
}

// verifyStandard verifies token with a standard JWT library (no leeway) and answers its
// claims.
func verifyStandard(t *testing.T, env map[string]string, token string) (jwt.MapClaims, error) {
	t.Helper()
	claims := jwt.MapClaims{}
	_, err := jwt.NewParser(jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer(env["PUBLIC_URL"]), jwt.WithAudience("tollgate"),
		jwt.WithExpirationRequired()).ParseWithClaims(token, claims, standardKeyfunc(t, env["PUBLIC_URL"]+"/.well-known/jwks.json"))
	return claims, err
}

// meBilling is /api/v1/me's billing without usage, as JSON values.
func meBilling(t *testing.T, env map[string]string, bearer string) map[string]any {
	t.Helper()
	var me struct{ Billing map[string]any }
	getJSON(t, env["PUBLIC_URL"]+"/api/v1/me", "Bearer "+bearer, &me)
	delete(me.Billing, "usage")
	return me.Billing
}

// subscribe sends the web provider's subscription of user, renewing at periodEnd, as
// subscription id sub.
func subscribe(t *testing.T, env map[string]string, user, sub string, periodEnd time.Time) {
	t.Helper()
	web := editFixture(t, "../billing/testdata/web/customer.subscription.updated.json", func(m map[string]any) {
		m["id"], m["created"] = "evt_"+sub, time.Now().Add(-time.Minute).Unix()
		obj := m["data"].(map[string]any)["object"].(map[string]any)
		obj["id"], obj["customer"], obj["metadata"] = sub, "cus_"+sub, map[string]any{"user_id": user}
		obj["items"].(map[string]any)["data"].([]any)[0].(map[string]any)["current_period_end"] = periodEnd.Unix()
	})
	if status, err := postWeb(http.DefaultClient, env["PUBLIC_URL"], web); err != nil || status != http.StatusOK {
		t.Fatalf("web event: %d %v", status, err)
	}
}

// TestEntitlementTokens: a Pro user's token verifies with a standard JWT library against
// /.well-known/jwks.json alone and says what /me says; a subscription ending in 5 s gives a
// token that expires by then; after a webhook that ends access a new token says free at
// once while one minted before says Pro until its exp, and not after; the service route
// refuses a user's token, and an entitlement token is no API bearer token.
func TestEntitlementTokens(t *testing.T) {
	t.Parallel()
	fake := identitytest.New(t)
	env := testEnv(t, map[string]string{"AUTH_URL": fake.URL, "ENTITLEMENT_TOKEN_TTL": "10s"})
	ctx := context.Background()
	migrateAndSyncPlans(t, env)
	code, key, errOut := runCmd(ctx, env, "keys", "create", "--name", "backend")
	if code != 0 {
		t.Fatalf("keys create: %s", errOut)
	}
	startServe(t, env)
	signIn := func(email string) (string, string) {
		user := fake.AddUser(email, "password1")
		s, err := identity.New(fake.URL, "", nil).SignInWithPassword(ctx, email, "password1")
		if err != nil {
			t.Fatal(err)
		}
		return user, s.AccessToken
	}
	pro, proBearer := signIn("pro@example.test")
	ending, endingBearer := signIn("ending@example.test")
	subscribe(t, env, pro, "sub_tokens_pro", time.Now().Add(30*24*time.Hour))
	endsAt := time.Now().Add(5 * time.Second).Truncate(time.Second)
	subscribe(t, env, ending, "sub_tokens_ending", endsAt)

	before, status := mintToken(t, env["PUBLIC_URL"], "/api/v1/entitlements/token", "Bearer "+proBearer)
	if status != http.StatusOK {
		t.Fatalf("mint: %d", status)
	}
	checkClaims(t, env, before, pro, proBearer)
	endingToken, _ := mintToken(t, env["PUBLIC_URL"], "/api/v1/entitlements/token", "Bearer "+endingBearer)
	if endingToken.ExpiresAt.After(endsAt) {
		t.Fatalf("a subscription ending at %v gave a token expiring at %v (/me: %v)", endsAt, endingToken.ExpiresAt, meBilling(t, env, endingBearer))
	}

	checkServiceRoute(t, env, strings.TrimSpace(key), pro, proBearer, before.Token)

	// Access ends by a webhook: a new token says free at once; the one before says pro.
	unsubscribe(t, env, pro, "sub_tokens_pro")
	after, _ := mintToken(t, env["PUBLIC_URL"], "/api/v1/entitlements/token", "Bearer "+proBearer)
	v, err := entitlementtoken.NewVerifier(entitlementtoken.Options{JWKSURL: env["PUBLIC_URL"] + "/.well-known/jwks.json", Issuer: env["PUBLIC_URL"]})
	if err != nil {
		t.Fatal(err)
	}
	now, err := v.Verify(ctx, after.Token)
	if err != nil || now.Billing.Subscribed || now.Billing.PlanKey() != "free" {
		t.Fatalf("after the end, a new token says %+v %v", now.Billing, err)
	}
	then, err := v.Verify(ctx, before.Token)
	if err != nil || !then.Billing.Subscribed || then.Billing.PlanKey() != "pro" {
		t.Fatalf("the token minted before says %+v %v, want pro until its exp", then.Billing, err)
	}

	// Past their exp, neither old token verifies; the subscription that ended by itself
	// gives a free token with no event.
	time.Sleep(time.Until(before.ExpiresAt.Add(time.Second)))
	for name, token := range map[string]string{"the token minted before": before.Token, "the ending one's": endingToken.Token} {
		if _, err := verifyStandard(t, env, token); !errors.Is(err, jwt.ErrTokenExpired) {
			t.Errorf("%s past its exp: %v", name, err)
		}
	}
	lapsed, _ := mintToken(t, env["PUBLIC_URL"], "/api/v1/entitlements/token", "Bearer "+endingBearer)
	if c, err := verifyStandard(t, env, lapsed.Token); err != nil || c["billing"].(map[string]any)["subscribed"] != false {
		t.Fatalf("after its end, the ending subscription's token: %v %v", c, err)
	}
}

// checkClaims: m, minted for user, verifies with a standard JWT library against the key
// set alone and says what /me says with bearer.
func checkClaims(t *testing.T, env map[string]string, m minted, user, bearer string) {
	t.Helper()
	claims, err := verifyStandard(t, env, m.Token)
	if err != nil {
		t.Fatalf("a standard library refuses the token: %v", err)
	}
	iat, _ := claims.GetIssuedAt()
	exp, _ := claims.GetExpirationTime()
	if claims["iss"] != env["PUBLIC_URL"] || claims["sub"] != user || claims["aud"] != "tollgate" || claims["jti"] == "" ||
		exp.Sub(iat.Time) > 10*time.Second || exp.Sub(iat.Time) < time.Second || !exp.Time.Equal(m.ExpiresAt) {
		t.Fatalf("claims %v, expires_at %v", claims, m.ExpiresAt)
	}
	if got, want := fmt.Sprint(claims["billing"]), fmt.Sprint(meBilling(t, env, bearer)); got != want || !strings.Contains(got, "pro") {
		t.Fatalf("billing %s, want /me's %s", got, want)
	}
}

// checkServiceRoute: a service key mints any user's token; a user's bearer token is 403
// there; an entitlement token is no API bearer token.
func checkServiceRoute(t *testing.T, env map[string]string, key, user, bearer, entitlementToken string) {
	t.Helper()
	serviced, status := mintToken(t, env["PUBLIC_URL"], "/api/v1/users/"+user+"/entitlements/token", "Bearer "+key)
	if status != http.StatusOK {
		t.Fatalf("service route: %d", status)
	}
	if c, err := verifyStandard(t, env, serviced.Token); err != nil || c["sub"] != user {
		t.Fatalf("the service route's token: %v %v", c, err)
	}
	if _, status := mintToken(t, env["PUBLIC_URL"], "/api/v1/users/"+user+"/entitlements/token", "Bearer "+bearer); status != http.StatusForbidden {
		t.Fatalf("a user's token on the service route: %d, want 403", status)
	}
	req, _ := http.NewRequest(http.MethodGet, env["PUBLIC_URL"]+"/api/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+entitlementToken)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an entitlement token as an API bearer token: %v %v", resp, err)
	}
}

// unsubscribe sends the web provider's deletion of user's subscription sub.
func unsubscribe(t *testing.T, env map[string]string, user, sub string) {
	t.Helper()
	deleted := editFixture(t, "../billing/testdata/web/customer.subscription.deleted.json", func(m map[string]any) {
		m["id"], m["created"] = "evt_deleted_"+sub, time.Now().Unix()
		obj := m["data"].(map[string]any)["object"].(map[string]any)
		obj["id"], obj["customer"], obj["metadata"] = sub, "cus_"+sub, map[string]any{"user_id": user}
	})
	if status, err := postWeb(http.DefaultClient, env["PUBLIC_URL"], deleted); err != nil || status != http.StatusOK {
		t.Fatalf("deleted: %d %v", status, err)
	}
}
