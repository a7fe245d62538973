package app

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate/tollgate/entitlementtoken"
	"github.com/tollgate/tollgate/internal/db/dbtest"
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
	if code, _, errOut := runCmd(ctx, env, "plans", "sync"); code != 0 {
		t.Fatalf("plans sync: %s", errOut)
	}
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
	claims, err := verifyStandard(t, env, before.Token)
	if err != nil {
		t.Fatalf("a standard library refuses the token: %v", err)
	}
	iat, _ := claims.GetIssuedAt()
	exp, _ := claims.GetExpirationTime()
	if claims["iss"] != env["PUBLIC_URL"] || claims["sub"] != pro || claims["aud"] != "tollgate" || claims["jti"] == "" ||
		exp.Sub(iat.Time) > 10*time.Second || exp.Sub(iat.Time) < time.Second || !exp.Time.Equal(before.ExpiresAt) {
		t.Fatalf("claims %v, expires_at %v", claims, before.ExpiresAt)
	}
	if got, want := fmt.Sprint(claims["billing"]), fmt.Sprint(meBilling(t, env, proBearer)); got != want || !strings.Contains(got, "pro") {
		t.Fatalf("billing %s, want /me's %s", got, want)
	}
	endingToken, _ := mintToken(t, env["PUBLIC_URL"], "/api/v1/entitlements/token", "Bearer "+endingBearer)
	if endingToken.ExpiresAt.After(endsAt) {
		t.Fatalf("a subscription ending at %v gave a token expiring at %v (/me: %v)", endsAt, endingToken.ExpiresAt, meBilling(t, env, endingBearer))
	}

	// The service route: a service key mints any user's; a user's token is 403 there.
	serviced, status := mintToken(t, env["PUBLIC_URL"], "/api/v1/users/"+pro+"/entitlements/token", "Bearer "+strings.TrimSpace(key))
	if status != http.StatusOK {
		t.Fatalf("service route: %d", status)
	}
	if c, err := verifyStandard(t, env, serviced.Token); err != nil || c["sub"] != pro {
		t.Fatalf("the service route's token: %v %v", c, err)
	}
	if _, status := mintToken(t, env["PUBLIC_URL"], "/api/v1/users/"+pro+"/entitlements/token", "Bearer "+proBearer); status != http.StatusForbidden {
		t.Fatalf("a user's token on the service route: %d, want 403", status)
	}
	req, _ := http.NewRequest(http.MethodGet, env["PUBLIC_URL"]+"/api/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+before.Token)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an entitlement token as an API bearer token: %v %v", resp, err)
	}

	// Access ends by a webhook: a new token says free at once; the one before says pro.
	deleted := editFixture(t, "../billing/testdata/web/customer.subscription.deleted.json", func(m map[string]any) {
		m["id"], m["created"] = "evt_tokens_deleted", time.Now().Unix()
		obj := m["data"].(map[string]any)["object"].(map[string]any)
		obj["id"], obj["customer"], obj["metadata"] = "sub_tokens_pro", "cus_sub_tokens_pro", map[string]any{"user_id": pro}
	})
	if status, err := postWeb(http.DefaultClient, env["PUBLIC_URL"], deleted); err != nil || status != http.StatusOK {
		t.Fatalf("deleted: %d %v", status, err)
	}
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

// TestSigningKeysAcrossInstances: two instances on one Postgres sign with the same key and
// serve the same key set; after "signing-keys rotate --now" new tokens carry the new kid
// on both (within a few seconds) and tokens signed before still verify against the set.
// No private key reaches the set, the listing or the logs.
func TestSigningKeysAcrossInstances(t *testing.T) {
	t.Parallel()
	fake := identitytest.New(t)
	dbURL := dbtest.PostgresURL(t)
	one := testEnv(t, map[string]string{"AUTH_URL": fake.URL, "DATABASE_URL": dbURL})
	other := testEnv(t, map[string]string{"AUTH_URL": fake.URL, "DATABASE_URL": dbURL})
	ctx := context.Background()
	if code, _, errOut := runCmd(ctx, one, "plans", "sync"); code != 0 {
		t.Fatalf("plans sync: %s", errOut)
	}
	_, logs := startServeLogs(t, one)
	startServe(t, other)
	fake.AddUser("keys@example.test", "password1")
	session, err := identity.New(fake.URL, "", nil).SignInWithPassword(ctx, "keys@example.test", "password1")
	if err != nil {
		t.Fatal(err)
	}
	kidOf := func(env map[string]string) (string, string) {
		t.Helper()
		m, status := mintToken(t, env["PUBLIC_URL"], "/api/v1/entitlements/token", "Bearer "+session.AccessToken)
		if status != http.StatusOK {
			t.Fatalf("mint: %d", status)
		}
		token, _, err := jwt.NewParser().ParseUnverified(m.Token, jwt.MapClaims{})
		if err != nil {
			t.Fatal(err)
		}
		return token.Header["kid"].(string), m.Token
	}
	jwks := func(env map[string]string) string {
		resp, err := http.Get(env["PUBLIC_URL"] + "/.well-known/jwks.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age=") {
			t.Fatalf("jwks: %d %v", resp.StatusCode, resp.Header)
		}
		return string(body)
	}
	first, old := kidOf(one)
	if second, _ := kidOf(other); second != first || jwks(one) != jwks(other) {
		t.Fatalf("the instances sign with %s and %s, serve %s and %s", first, second, jwks(one), jwks(other))
	}
	code, out, errOut := runCmd(ctx, one, "signing-keys", "rotate", "--now")
	if code != 0 {
		t.Fatalf("rotate: %s", errOut)
	}
	for _, env := range []map[string]string{one, other} {
		waitUntil(t, time.Now().Add(5*time.Second), func() bool { kid, _ := kidOf(env); return kid != first }, "the new key to sign")
	}
	if !strings.Contains(out, "added ") || jwks(one) != jwks(other) {
		t.Fatalf("rotate said %q; sets %s, %s", out, jwks(one), jwks(other))
	}
	if _, audited, _ := runCmd(ctx, one, "audit", "list"); !strings.Contains(audited, "signing-keys rotate") {
		t.Fatalf("the rotation is not in the audit log:\n%s", audited)
	}
	if _, err := verifyStandard(t, one, old); err != nil {
		t.Fatalf("a token signed before the rotation: %v", err)
	}
	_, listing, _ := runCmd(ctx, one, "signing-keys", "list")
	rows, err := dbtest.Open(t, dbURL).Query("select private_key from signing_keys")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var private string
		rows.Scan(&private)
		for name, text := range map[string]string{"the key set": jwks(one), "the listing": listing, "the log": logs()} {
			if private == "" || strings.Contains(text, private) || strings.Contains(text, private[len(private)/2:]) || strings.Contains(text, `"d":`) {
				t.Errorf("%s holds a private key", name)
			}
		}
	}
	if strings.Count(listing, "\n") != 3 || !strings.Contains(listing, "signing") || !strings.Contains(listing, "retired") {
		t.Fatalf("listing:\n%s", listing)
	}
}

// hookRequest is the Custom Access Token hook's request for user as Supabase Auth sends it
// (metadata, claims, one signature per secret joined by ", "), signed with secret (raw).
func hookRequest(t *testing.T, base, user string, secrets ...[]byte) (*http.Request, string) {
	t.Helper()
	claims := `{"aud":"authenticated","exp":1796000000,"iat":1795996400,"iss":"http://127.0.0.1:9999/auth/v1","sub":"` + user +
		`","email":"hook@example.test","role":"authenticated","aal":"aal1","session_id":"s1","is_anonymous":false}`
	body := `{"metadata":{"uuid":"m1","name":"custom_access_token"},"user_id":"` + user + `","claims":` + claims + `,"authentication_method":"password"}`
	id, at := "msg_"+user[:8], strconv.FormatInt(time.Now().Unix(), 10)
	var signatures []string
	for _, secret := range secrets {
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte(id + "." + at + "." + body))
		signatures = append(signatures, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/hooks/custom-access-token", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", at)
	req.Header.Set("webhook-signature", strings.Join(signatures, ", "))
	return req, claims
}

// TestTheAccessTokenHookThroughServe: with AUTH_HOOK_SECRET (two, as during a rotation),
// the hook answers a Pro user's claims unchanged plus tollgate (pro, valid_until); with
// the database stalled or stopped it answers the claims unchanged with 200 within 2 s.
// Without the setting the route is not there.
func TestTheAccessTokenHookThroughServe(t *testing.T) {
	t.Parallel()
	proxied, _, proxy := proxiedPostgres(t)
	secret, rotated := []byte("hook-secret-0123456789abcdef"), []byte("hook-secret-rotated-0123456789")
	env := testEnv(t, map[string]string{"DATABASE_URL": proxied, "AUTH_URL": identitytest.New(t).URL,
		"AUTH_HOOK_SECRET": "v1,whsec_" + base64.StdEncoding.EncodeToString(rotated) + "|v1,whsec_" + base64.StdEncoding.EncodeToString(secret)})
	if code, _, errOut := runCmd(context.Background(), env, "plans", "sync"); code != 0 {
		t.Fatalf("plans sync: %s", errOut)
	}
	startServe(t, env)
	user := "6f1e2d3c-0000-4000-8000-00000000000a"
	subscribe(t, env, user, "sub_hook_pro", time.Now().Add(30*24*time.Hour))
	other := []byte("another-destination-secret-0000")
	req, claims := hookRequest(t, env["PUBLIC_URL"], user, other, secret)
	var out struct{ Claims map[string]json.RawMessage }
	status, body := doJSON(t, req, &out)
	var in map[string]json.RawMessage
	json.Unmarshal([]byte(claims), &in)
	var held struct {
		Plan       struct{ Key string }
		ValidUntil int64 `json:"valid_until"`
	}
	if status != http.StatusOK || json.Unmarshal(out.Claims["tollgate"], &held) != nil || held.Plan.Key != "pro" || held.ValidUntil == 0 ||
		len(out.Claims) != len(in)+1 || !strings.HasPrefix(body, `{"claims":`+strings.TrimSuffix(claims, "}")+`,"tollgate":`) {
		t.Fatalf("hook: %d %s", status, body)
	}
	for name, how := range map[string]func(){"stalled": proxy.Stall, "stopped": proxy.Cut} {
		how()
		stranger := "6f1e2d3c-0000-4000-8000-0000000000" + map[string]string{"stalled": "0b", "stopped": "0c"}[name]
		req, claims := hookRequest(t, env["PUBLIC_URL"], stranger, secret)
		start := time.Now()
		status, body := doJSON(t, req, &out)
		if took := time.Since(start); status != http.StatusOK || body != `{"claims":`+claims+`}` || took > 2500*time.Millisecond {
			t.Fatalf("database %s: %d after %v: %s", name, status, took, body)
		}
	}

	plain := testEnv(t, nil)
	startServe(t, plain)
	req, _ = hookRequest(t, plain["PUBLIC_URL"], user, secret)
	if status, _ := doJSON(t, req, nil); status != http.StatusNotFound {
		t.Fatalf("without AUTH_HOOK_SECRET: %d, want 404", status)
	}
}

// doJSON sends req and answers its status and body, decoded into into when 200.
func doJSON(t *testing.T, req *http.Request, into any) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && into != nil {
		if err := json.Unmarshal(body, into); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
	}
	return resp.StatusCode, string(body)
}
