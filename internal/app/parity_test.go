package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/identity"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
)

// TestOneBillingAnswerEverywhere: for a user subscribed through the web provider and one
// through the mobile provider, /api/v1/me, the account page, the service API, `users show
// --json` and `entitlements check` give the same plan, status and entitlements.
func TestOneBillingAnswerEverywhere(t *testing.T) {
	fake := identitytest.New(t)
	env := testEnv(t, map[string]string{"AUTH_URL": fake.URL})
	migrateAndSyncPlans(t, env)
	code, serviceKey, errOut := runCmd(context.Background(), env, "keys", "create", "--name", "parity")
	if code != 0 {
		t.Fatalf("keys create: %s", errOut)
	}
	serviceKey = strings.TrimSpace(serviceKey)
	startServe(t, env)
	base := env["PUBLIC_URL"]
	webUser, mobileUser := fake.AddUser("web@example.test", "password1"), fake.AddUser("mobile@example.test", "password1")
	periodEnd := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)

	web := editFixture(t, "../billing/testdata/web/customer.subscription.updated.json", func(m map[string]any) {
		m["created"] = time.Now().Add(-time.Minute).Unix()
		obj := m["data"].(map[string]any)["object"].(map[string]any)
		obj["metadata"] = map[string]any{"user_id": webUser}
		obj["customer"] = "cus_parity"
		obj["items"].(map[string]any)["data"].([]any)[0].(map[string]any)["current_period_end"] = periodEnd.Unix()
	})
	if status, err := postWeb(http.DefaultClient, base, web); err != nil || status != http.StatusOK {
		t.Fatalf("web event: %d %v", status, err)
	}
	const mobileTime = "2006-01-02T15:04:05.000000-0700"
	mobile := editFixture(t, "../billing/testdata/mobile/subscription_started.json", func(m map[string]any) {
		m["customer_user_id"] = mobileUser
		m["event_datetime"] = time.Now().Add(-time.Minute).UTC().Format(mobileTime)
		m["event_properties"].(map[string]any)["subscription_expires_at"] = periodEnd.Format(mobileTime)
	})
	req, _ := http.NewRequest(http.MethodPost, base+"/billing/webhooks/mobile", strings.NewReader(string(mobile)))
	req.Header.Set("Authorization", mobileSecret)
	if status, _, err := send(http.DefaultClient, req); err != nil || status != http.StatusOK {
		t.Fatalf("mobile event: %d %v", status, err)
	}

	for _, u := range []struct{ id, email, provider string }{{webUser, "web@example.test", "web"}, {mobileUser, "mobile@example.test", "mobile"}} {
		t.Run(u.provider, func(t *testing.T) {
			// /api/v1/me with the user's token.
			session, err := identity.New(fake.URL, "", nil).SignInWithPassword(context.Background(), u.email, "password1")
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/me", nil)
			req.Header.Set("Authorization", "Bearer "+session.AccessToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var me struct {
				Billing struct {
					Subscribed   bool
					Status       string
					Provider     string
					Plan         struct{ Key, Name string }
					Entitlements map[string]any
					Usage        map[string]struct{ Used, Limit int64 }
				}
			}
			json.NewDecoder(resp.Body).Decode(&me)
			resp.Body.Close()
			b := me.Billing
			if !b.Subscribed || b.Status != "active" || b.Provider != u.provider || b.Plan.Key != "pro" {
				t.Fatalf("/me billing: %+v", b)
			}

			// The account page, signed in through the forms.
			jar, _ := cookiejar.New(nil)
			browser := &http.Client{Jar: jar}
			resp, err = browser.PostForm(base+"/session", url.Values{"email": {u.email}, "password": {"password1"}})
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			text := strings.Join(strings.Fields(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(string(page), " ")), " ")
			want := fmt.Sprintf("Plan %s Status %s Period ends %s", b.Plan.Name, b.Status, periodEnd.Format(time.DateOnly))
			if !strings.Contains(text, want) {
				t.Fatalf("account page lacks %q: %s", want, text)
			}
			for name, v := range b.Entitlements {
				chip := name
				if n, ok := v.(float64); ok {
					chip = fmt.Sprintf("%s: %d", name, int64(n))
					if u, metered := b.Usage[name]; metered { // this period's use of the limit
						chip = fmt.Sprintf("%s: %d of %d", name, u.Used, u.Limit)
					}
				} else if v != true {
					continue
				}
				if !strings.Contains(text, chip) {
					t.Errorf("account page lacks the entitlement %q of /me", chip)
				}
			}

			// The service API, with a key: the same billing object.
			req, _ = http.NewRequest(http.MethodGet, base+"/api/v1/users/"+u.id+"/entitlements", nil)
			req.Header.Set("Authorization", "Bearer "+serviceKey)
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var service struct {
				Subscribed   bool
				Status       string
				Plan         struct{ Key string }
				Entitlements map[string]any
			}
			json.NewDecoder(resp.Body).Decode(&service)
			resp.Body.Close()
			if service.Plan.Key != b.Plan.Key || service.Status != b.Status || !service.Subscribed || fmt.Sprint(service.Entitlements) != fmt.Sprint(b.Entitlements) {
				t.Fatalf("service API %+v, /me %+v", service, b)
			}

			// users show --json: the same billing object, the subscription and its event.
			code, out, errOut := runCmd(context.Background(), env, "users", "show", u.id, "--json")
			var report struct {
				Customers     []struct{ ID int64 }
				Subscriptions []struct{ Provider, Status, Plan string }
				Billing       struct {
					Subscribed   bool
					Status       string
					Plan         struct{ Key string }
					Entitlements map[string]any
				}
				RecentEvents []struct{ Provider, Type string } `json:"recent_events"`
			}
			if err := json.Unmarshal([]byte(out), &report); code != 0 || err != nil {
				t.Fatalf("users show --json: %d %v %s", code, err, errOut)
			}
			rb := report.Billing
			if rb.Plan.Key != b.Plan.Key || rb.Status != b.Status || rb.Subscribed != b.Subscribed || fmt.Sprint(rb.Entitlements) != fmt.Sprint(b.Entitlements) {
				t.Fatalf("users show billing %+v, /me %+v", rb, b)
			}
			if len(report.Customers) != 1 || len(report.Subscriptions) != 1 || report.Subscriptions[0].Provider != u.provider ||
				report.Subscriptions[0].Status != "active" || len(report.RecentEvents) != 1 || report.RecentEvents[0].Provider != u.provider {
				t.Fatalf("users show: %s", out)
			}
			if code, text, _ := runCmd(context.Background(), env, "users", "show", u.id); code != 0 || !strings.Contains(text, "billing: plan pro, subscribed true, status active") {
				t.Fatalf("users show: %d %s", code, text)
			}

			// The command line.
			code, out, _ = runCmd(context.Background(), env, "entitlements", "check", u.id, "exports")
			if code != 0 || !strings.Contains(out, "entitled to exports (plan pro, active)") {
				t.Fatalf("entitlements check exports: %d %q", code, out)
			}
			code, out, _ = runCmd(context.Background(), env, "entitlements", "check", u.id, "teleport")
			if code != 1 || !strings.Contains(out, "not entitled to teleport") {
				t.Fatalf("entitlements check teleport: %d %q", code, out)
			}
		})
	}
	if code, out, _ := runCmd(context.Background(), env, "users", "show", "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"); code != 0 ||
		!strings.Contains(out, "billing: plan free, subscribed false") || !strings.Contains(out, "customers:\n  none") {
		t.Fatalf("users show of a user never seen: %d %s", code, out)
	}
	if code, _, errOut := runCmd(context.Background(), env, "entitlements", "check", "not-a-uuid", "exports"); code != 1 || !strings.Contains(errOut, "USER_ID") {
		t.Fatalf("a bad user id: %d %q", code, errOut)
	}
	if code, _, errOut := runCmd(context.Background(), env, "entitlements", "check", webUser); code == 0 || !strings.Contains(errOut, "USER_ID NAME") {
		t.Fatalf("a missing argument: %d %q", code, errOut)
	}
}

// editFixture reads a fixture and lets fn change it (billingtest.Edit).
func editFixture(t *testing.T, path string, fn func(m map[string]any)) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return billingtest.Edit(t, raw, fn)
}

// TestKeysCommands: create prints a key once, list shows it without the key, revoke ends it.
func TestKeysCommands(t *testing.T) {
	env := testEnv(t, nil)
	ctx := context.Background()
	if code, _, errOut := runCmd(ctx, env, "migrate"); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	code, key, errOut := runCmd(ctx, env, "keys", "create", "--name", "billing-backend")
	key = strings.TrimSpace(key)
	if code != 0 || !regexp.MustCompile(`^tgk_[A-Za-z0-9_-]{43}$`).MatchString(key) {
		t.Fatalf("keys create: %d %q %s", code, key, errOut)
	}
	if !strings.Contains(errOut, "shown this once") || strings.Contains(errOut, key) {
		t.Fatalf("keys create does not say the key is shown once: %q", errOut)
	}
	if code, _, errOut := runCmd(ctx, env, "keys", "create", "--name", "billing-backend"); code == 0 || !strings.Contains(errOut, "exists") {
		t.Fatalf("a second key of one name: %d %s", code, errOut)
	}
	code, list, _ := runCmd(ctx, env, "keys", "list")
	if code != 0 || !strings.Contains(list, "billing-backend") || !strings.Contains(list, key[:10]+"…") || strings.Contains(list, key) || !strings.Contains(list, "never") {
		t.Fatalf("keys list: %d %q", code, list)
	}
	if code, out, _ := runCmd(ctx, env, "keys", "revoke", "billing-backend"); code != 0 || !strings.Contains(out, "revoked billing-backend") {
		t.Fatalf("keys revoke: %d %q", code, out)
	}
	if code, _, errOut := runCmd(ctx, env, "keys", "revoke", "billing-backend"); code == 0 || !strings.Contains(errOut, "no key is named") {
		t.Fatalf("revoking twice: %d %q", code, errOut)
	}
	if code, list, _ := runCmd(ctx, env, "keys", "list"); code != 0 || strings.Contains(list, "billing-backend") {
		t.Fatalf("keys list after revoke: %q", list)
	}
}
