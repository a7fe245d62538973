package app

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/identity"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
)

// TestAWebhookToOneInstanceChangesMeOnTheOther: two serve instances on one Postgres, both
// keeping billing answers in memory. The one that did not receive the webhook answers
// /api/v1/me anew within a second of it, told by the database's notification.
func TestAWebhookToOneInstanceChangesMeOnTheOther(t *testing.T) {
	fake := identitytest.New(t)
	dbURL := dbtest.PostgresURL(t)
	one := testEnv(t, map[string]string{"AUTH_URL": fake.URL, "DATABASE_URL": dbURL})
	other := testEnv(t, map[string]string{"AUTH_URL": fake.URL, "DATABASE_URL": dbURL})
	if code, _, errOut := runCmd(context.Background(), one, "plans", "sync"); code != 0 {
		t.Fatalf("plans sync: %s", errOut)
	}
	startServe(t, one)
	startServe(t, other)
	user := fake.AddUser("both@example.test", "password1")
	session, err := identity.New(fake.URL, "", nil).SignInWithPassword(context.Background(), "both@example.test", "password1")
	if err != nil {
		t.Fatal(err)
	}
	subscribed := func() bool {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, other["PUBLIC_URL"]+"/api/v1/me", nil)
		req.Header.Set("Authorization", "Bearer "+session.AccessToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var me struct{ Billing struct{ Subscribed bool } }
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&me) != nil {
			t.Fatalf("/api/v1/me: %d", resp.StatusCode)
		}
		return me.Billing.Subscribed
	}
	if subscribed() { // and now the other instance keeps the answer
		t.Fatal("subscribed before any event")
	}

	web := editFixture(t, "../billing/testdata/web/customer.subscription.updated.json", func(m map[string]any) {
		m["created"] = time.Now().Add(-time.Minute).Unix()
		obj := m["data"].(map[string]any)["object"].(map[string]any)
		obj["metadata"] = map[string]any{"user_id": user}
		obj["items"].(map[string]any)["data"].([]any)[0].(map[string]any)["current_period_end"] = time.Now().Add(30 * 24 * time.Hour).Unix()
	})
	if status, err := postWeb(http.DefaultClient, one["PUBLIC_URL"], web); err != nil || status != http.StatusOK {
		t.Fatalf("web event: %d %v", status, err)
	}
	sent := time.Now()
	for !subscribed() {
		if time.Since(sent) > time.Second {
			t.Fatal("/api/v1/me on the other instance did not change within a second")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the other instance answered anew after %v", time.Since(sent))
}
