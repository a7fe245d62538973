package app

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
	"github.com/tollgate/tollgate/internal/stores"
)

// acmeAPI is the made-up store's API: each subscription's state, as it answers for it.
type acmeAPI struct {
	mu   sync.Mutex
	subs map[string]billingtest.AcmeEvent
}

func (a *acmeAPI) read(_ context.Context, id string, _ []byte) (json.RawMessage, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return json.Marshal(a.subs[id])
}

// acmeStore is billingtest's Acme as an entry of the list of stores: its adapter, its test
// events (signed with Acme-Signature) and its API, which reads one subscription at a time.
func acmeStore(api *acmeAPI) stores.Store {
	edit := func(body []byte, fn func(ev *billingtest.AcmeEvent)) ([]byte, error) {
		var ev billingtest.AcmeEvent
		if err := json.Unmarshal(body, &ev); err != nil {
			return nil, err
		}
		fn(&ev)
		return json.Marshal(ev)
	}
	return stores.Store{Name: "acme", Display: "Acme", On: func(config.Config) bool { return true },
		Open: func(config.Config) (stores.Opened, error) {
			return stores.Opened{Adapter: billingtest.Acme{Secret: billingtest.AcmeSecret},
				Reading: func(func(time.Duration, string)) (stores.Reading, error) { return stores.Reading{Read: api.read}, nil }}, nil
		},
		TestEvents: &stores.TestEvents{Shape: "Acme",
			LooksLike: func(top map[string]json.RawMessage) bool { _, kind := top["kind"]; return kind },
			ForUser: func(body []byte, user string) ([]byte, error) {
				return edit(body, func(ev *billingtest.AcmeEvent) { ev.User, ev.Subscription = user, "acme_"+user })
			},
			MoveToNow: func(body []byte, now time.Time) ([]byte, error) {
				return edit(body, func(ev *billingtest.AcmeEvent) {
					ev.At, ev.Until, ev.Event = now, now.AddDate(0, 1, 0), ev.Event+"_now"
				})
			},
			Deliver: func(_ context.Context, d stores.Delivery) ([]byte, http.Header, error) {
				return d.Body, http.Header{"Content-Type": {"application/json"}, "Acme-Signature": {billingtest.AcmeSign(billingtest.AcmeSecret, d.Body)}}, nil
			},
			NotHeard: func(config.Config, int) string { return "" },
		},
		API: &stores.API{On: func(config.Config) bool { return true }, Needs: "ACME_KEY: is required to read Acme"},
	}
}

// TestAStoreIsOneEntryInTheList: a store that only this test knows, added to the list,
// is heard on its webhook route, sent by "webhook send", named on the start-up line, drawn
// on the console's overview and found by its search, and reconciled through its API — with
// no other edit.
func TestAStoreIsOneEntryInTheList(t *testing.T) {
	ctx := context.Background()
	api := &acmeAPI{subs: map[string]billingtest.AcmeEvent{}}
	list := append(stores.All(), acmeStore(api))
	fake := identitytest.New(t)
	env := testEnv(t, map[string]string{"AUTH_URL": fake.URL, "ADMIN_EMAILS": "ops@example.test"})
	migrateAndSyncPlans(t, env)
	_, logs := startServeWith(t, env, list)
	if !strings.Contains(logs(), `providers=web,mobile,acme `) {
		t.Errorf("the start-up line does not name acme:\n%s", logs())
	}
	user, _ := fake.Token("acme-buyer@example.test")

	now := time.Now().UTC().Truncate(time.Second)
	started := billingtest.AcmeEvent{Event: "acme_evt_1", Kind: "started", At: now.Add(-time.Hour), Subscription: "acme_sub_1",
		User: user, Product: "com.example.app.pro.monthly", Until: now.AddDate(0, 1, 0)}
	file := filepath.Join(t.TempDir(), "started.json")
	body, _ := json.Marshal(started)
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmdWith(ctx, list, env, "webhook", "send", "--provider", "acme", "--file", file)
	if code != 0 || !strings.Contains(out, "outcome: applied") || !strings.Contains(out, "user "+user+": plan pro, active") {
		t.Fatalf("webhook send --provider acme: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCmdWith(ctx, list, env, "webhook", "send", "--provider", "web", "--file", file); code != 1 || !strings.Contains(errOut, "holds a acme event (Acme)") {
		t.Errorf("an Acme event sent as web: exit %d %s", code, errOut)
	}

	operator := signedInClient(t, env["PUBLIC_URL"], fake, "ops@example.test")
	if _, page := fetch(t, operator, "GET", env["PUBLIC_URL"]+"/admin", nil); !strings.Contains(page, "<th class=\"num\">acme</th>") {
		t.Errorf("the overview has no acme series:\n%s", page)
	}
	if _, page := fetch(t, operator, "GET", env["PUBLIC_URL"]+"/admin/customers?q=acme_sub_1", nil); !strings.Contains(page, user) {
		t.Errorf("the console's search does not find the acme subscription:\n%s", page)
	}

	lapsed := started
	lapsed.Kind, lapsed.At = "lapsed", now
	api.mu.Lock()
	api.subs["acme_sub_1"] = lapsed
	api.mu.Unlock()
	code, out, errOut = runCmdWith(ctx, list, env, "reconcile", "--provider", "acme")
	if code != 0 || !strings.Contains(out, "reconcile acme: 1 checked, 1 drifted (repaired 1)") {
		t.Fatalf("reconcile --provider acme: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, _ := runCmdWith(ctx, list, env, "entitlements", "check", user, "pro"); code != 1 {
		t.Errorf("after the repair the user is entitled still: exit %d", code)
	}
	if code, _, errOut := runCmd(ctx, env, "reconcile", "--provider", "acme"); code != 1 || !strings.Contains(errOut, `got "acme"`) {
		t.Errorf("a binary without acme took --provider acme: exit %d %s", code, errOut)
	}
}
