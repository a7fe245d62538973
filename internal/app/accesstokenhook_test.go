package app

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/identity/identitytest"
)

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
	migrateAndSyncPlans(t, env)
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
		if took := time.Since(start); status != http.StatusOK || body != `{"claims":`+claims+`}` || took > 2*time.Second {
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
