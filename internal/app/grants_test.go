package app

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/identity"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
	"github.com/tollgate/tollgate/internal/outbound/outboundtest"
)

// TestAGrantEndsByItselfOnEveryInstance: a user with nothing is granted pro for 2 s
// through the service API. /api/v1/me says pro at once on every instance and free within
// a second of the end with nothing but reads in between, though answers are kept for
// 30 s; the app's backend hears one entitlements.changed for the start and one for the
// end. On SQLite with one instance, on Postgres with two.
func TestAGrantEndsByItselfOnEveryInstance(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			fake := identitytest.New(t)
			receiver := outboundtest.NewReceiver(t)
			vars := map[string]string{"AUTH_URL": fake.URL, "BILLING_ANSWER_MAX_AGE": "30s",
				"OUTBOUND_WEBHOOK_URL": receiver.URL, "OUTBOUND_WEBHOOK_SECRET": outboundtest.Secret}
			instances := 1
			if engine == "postgres" {
				vars["DATABASE_URL"], instances = dbtest.PostgresURL(t), 2
			}
			var envs []map[string]string
			for range instances {
				envs = append(envs, testEnv(t, vars))
			}
			if envs[1%instances]["DATABASE_URL"] != envs[0]["DATABASE_URL"] {
				t.Fatal("the instances do not share a database")
			}
			ctx := context.Background()
			migrateAndSyncPlans(t, envs[0])
			code, key, errOut := runCmd(ctx, envs[0], "keys", "create", "--name", "support")
			if code != 0 {
				t.Fatalf("keys create: %s", errOut)
			}
			for _, env := range envs {
				startServe(t, env)
			}
			user := fake.AddUser("granted@example.test", "password1")
			session, err := identity.New(fake.URL, "", nil).SignInWithPassword(ctx, "granted@example.test", "password1")
			if err != nil {
				t.Fatal(err)
			}
			plan := func(env map[string]string) string {
				t.Helper()
				var me struct {
					Billing struct{ Plan struct{ Key string } }
				}
				getJSON(t, env["PUBLIC_URL"]+"/api/v1/me", "Bearer "+session.AccessToken, &me)
				return me.Billing.Plan.Key
			}
			for _, env := range envs {
				if got := plan(env); got != "free" { // and each instance keeps that answer
					t.Fatalf("before the grant: %s", got)
				}
			}

			req, _ := http.NewRequest(http.MethodPost, envs[0]["PUBLIC_URL"]+"/api/v1/users/"+user+"/grants",
				strings.NewReader(`{"plan":"pro","duration":"2s","reason":"acceptance"}`))
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(key))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var made struct {
				Ends time.Time `json:"ends_at"`
			}
			if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&made) != nil {
				t.Fatalf("grant: %d", resp.StatusCode)
			}
			resp.Body.Close()
			for i, env := range envs {
				// The granting instance answers anew at once; the other once the database
				// tells it, within a second.
				waitUntil(t, time.Now().Add(time.Second), func() bool { return plan(env) == "pro" }, "instance %d to say pro", i)
			}
			time.Sleep(time.Until(made.Ends))
			for i, env := range envs {
				waitUntil(t, made.Ends.Add(time.Second), func() bool { return plan(env) == "free" }, "instance %d to say free", i)
			}
			waitUntil(t, made.Ends.Add(time.Minute), func() bool { return len(receiver.Accepted()) >= 2 }, "the end's delivery")
			got := receiver.Accepted()
			start, end := got[0].Event.Data, got[1].Event.Data
			if start.Current["subscribed"] != true || end.Previous["subscribed"] != true || end.Current["subscribed"] != false ||
				end.Cause.EventType != "grant.ended" || end.Current["status"] != "expired" {
				t.Fatalf("deliveries: %s\n%s", got[0].Body, got[1].Body)
			}
			var recorded int
			check := dbtest.Open(t, envs[0]["DATABASE_URL"])
			if err := check.QueryRow(`select (select count(*) from outbound_deliveries where user_id = $1)
				+ (select count(*) from outbound_new_events where user_id = $1)`, user).Scan(&recorded); err != nil || recorded != 2 {
				t.Fatalf("%d changes recorded (%v), want the start's and the end's", recorded, err)
			}
		})
	}
}

// getJSON decodes what GET url answers 200 with, sending authorization.
func getJSON(t *testing.T, url, authorization string, into any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", authorization)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(into) != nil {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
}

// waitUntil polls cond until it holds, failing the test at deadline.
func waitUntil(t *testing.T, deadline time.Time, cond func() bool, what string, args ...any) {
	t.Helper()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain for "+what, args...)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
