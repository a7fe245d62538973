package app

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/identity"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
)

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
	migrateAndSyncPlans(t, one)
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
