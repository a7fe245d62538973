package app

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
)

// Every provider's lifecycle fixtures, sent with "webhook send --now --user" in the order
// a subscription lives them, move that user's plan as the provider means: a renewal keeps
// Pro, a cancellation at the period's end keeps it until then, an expiry, a refund or a
// failed payment without grace ends it, and what tollgate does not act on is ignored. One
// user's sends never touch another's subscription, though all come from the same files;
// Google Play goes through the development stand-in, with no network.
func TestLifecycleFixturesMoveThePlan(t *testing.T) {
	ctx := context.Background()
	chain := filepath.Join(t.TempDir(), "chain.pem")
	fake := identitytest.New(t)
	env := testEnv(t, map[string]string{"APP_ENV": "development", "APPSTORE_TEST_CHAIN": chain, "PADDLE_WEBHOOK_SECRET": "pdl_ntfset_lifecycle",
		"AUTH_URL": fake.URL, "ADMIN_EMAILS": "ops@example.test"})
	migrateAndSyncPlans(t, env)
	// A server that does not hear the App Store: the first send makes the local chain and
	// names both settings the server needs.
	stop := startServe(t, env)
	settings := "APPSTORE_BUNDLE_ID=com.example.app APPSTORE_ROOT_CERTS=" + appstoredev.RootPath(chain)
	if code, _, errOut := runCmd(ctx, env, "webhook", "send", "--provider", "appstore", "--file", "../billing/testdata/appstore/subscribed.json"); code == 0 ||
		!strings.Contains(errOut, "404 Not Found; the server hears notifications signed with the local test chain when started with "+settings) {
		t.Fatalf("an App Store send to a server without it: exit %d %q", code, errOut)
	}
	stop()
	env["APPSTORE_BUNDLE_ID"], env["APPSTORE_ROOT_CERTS"] = "com.example.app", appstoredev.RootPath(chain)
	startServe(t, env)

	const (
		pro       = `plan pro, active until `
		cancelled = `plan pro, cancelled until `
		expired   = `plan free, expired period ended `
		refunded  = `plan free, refunded period ended `
		ignored   = `outcome: ignored`
	)
	type step struct{ file, want string }
	for n, tc := range []struct {
		provider string
		lives    [][]step // each a user's subscription, start to end
	}{
		{"web", [][]step{
			{{"customer.subscription.updated", pro}, {"customer.subscription.updated.renewed", pro},
				{"customer.subscription.updated.cancel_at_period_end", cancelled}, {"customer.subscription.deleted", expired}},
			{{"customer.subscription.updated", pro}, {"invoice.payment_failed", ignored},
				{"customer.subscription.updated.past_due", `plan pro, past_due until `}, {"charge.refunded", ignored}},
		}},
		{"mobile", [][]step{
			{{"subscription_started", pro}, {"subscription_renewed", pro}, {"subscription_renewal_cancelled", cancelled}, {"subscription_expired", expired}},
			{{"subscription_started", pro}, {"billing_issue_detected", ignored}, {"subscription_refunded", refunded}},
		}},
		{"appstore", [][]step{
			{{"subscribed", pro}, {"did_renew", pro}, {"did_change_renewal_status", cancelled}, {"expired", expired}},
			{{"subscribed", pro}, {"did_fail_to_renew", `plan free, past_due period ended `}, {"refund", refunded}},
		}},
		{"playstore", [][]step{
			{{"subscription_purchased", pro}, {"subscription_renewed", pro}, {"subscription_canceled", cancelled}, {"subscription_expired", expired}},
			{{"subscription_purchased", pro}, {"subscription_on_hold", `plan free, past_due period ended `}, {"subscription_revoked", refunded}},
		}},
		{"paddle", [][]step{
			{{"subscription.created", pro}, {"transaction.completed", pro}, {"subscription.updated", pro},
				{"subscription.updated.scheduled_cancel", cancelled}, {"subscription.canceled", expired}},
			{{"subscription.created", pro}, {"adjustment.created", pro}, {"adjustment.updated", refunded}},
			{{"subscription.created", pro}, {"subscription.past_due", `plan pro, past_due until `}},
		}},
	} {
		for i, life := range tc.lives {
			user := fmt.Sprintf("0e7a1c52-1f0b-4c1e-9a55-%06d%06d", n, i)
			named := 0 // the events that name the user: all but those ignored
			for _, s := range life {
				if s.want != ignored {
					named++
				}
				file := "../billing/testdata/" + tc.provider + "/" + s.file + ".json"
				code, out, errOut := runCmd(ctx, env, "webhook", "send", "--provider", tc.provider, "--now", "--user", user, "--file", file)
				want := regexp.QuoteMeta(s.want)
				if s.want != ignored {
					want = `(?m)^user ` + user + `: ` + want
				}
				if code != 0 || !regexp.MustCompile(want).MatchString(out) {
					t.Fatalf("%s for %s: exit %d, want %q:\n%s%s", file, user, code, s.want, out, errOut)
				}
			}
			checkUsersShowLists(t, env, user, tc.provider, named)
		}
	}

	// Google Play's events are shown, and found, by Google's names of their types.
	operator := signedInClient(t, env["PUBLIC_URL"], fake, "ops@example.test")
	_, all := fetch(t, operator, "GET", env["PUBLIC_URL"]+"/admin/events?provider=playstore", nil)
	_, purchases := fetch(t, operator, "GET", env["PUBLIC_URL"]+"/admin/events?provider=playstore&type=SUBSCRIPTION_PURCHASED", nil)
	named := regexp.MustCompile(`>(SUBSCRIPTION_[A-Z_]+)</a>`)
	if got := named.FindAllStringSubmatch(all, -1); len(got) != 7 || strings.Contains(all, ">subscription.") {
		t.Errorf("the Events page names %d Play events by Google's names, want all 7 sent:\n%s", len(got), all)
	}
	if got := named.FindAllStringSubmatch(purchases, -1); len(got) != 2 || got[0][1] != "SUBSCRIPTION_PURCHASED" || got[1][1] != "SUBSCRIPTION_PURCHASED" {
		t.Errorf("filtered by SUBSCRIPTION_PURCHASED, the Events page lists %q, want the two purchases", got)
	}
	if !strings.Contains(purchases, `SUBSCRIPTION_PURCHASED</a> <span class="muted">(4)</span>`) {
		t.Errorf("the Events page does not keep Google's number beside the name:\n%s", purchases)
	}
	playUser := "0e7a1c52-1f0b-4c1e-9a55-000003000000"
	if _, out, _ := runCmd(ctx, env, "users", "show", playUser); !strings.Contains(out, "SUBSCRIPTION_PURCHASED (4)") || !strings.Contains(out, "SUBSCRIPTION_EXPIRED (13)") {
		t.Errorf("users show does not name Play's events with Google's number beside:\n%s", out)
	}
}

// checkUsersShowLists: "users show" lists the n events sent for user that name them (as the
// console's timeline does), every one of provider's, whether or not its payload carries
// the user's id as text (the App Store's are signed, Google Play's base64).
func checkUsersShowLists(t *testing.T, env map[string]string, user, provider string, n int) {
	t.Helper()
	code, out, errOut := runCmd(context.Background(), env, "users", "show", user, "--json")
	var report struct {
		RecentEvents  []struct{ Provider, Type string } `json:"recent_events"`
		Subscriptions []struct {
			LastEventType string `json:"last_event_type"`
		} `json:"subscriptions"`
	}
	if err := json.Unmarshal([]byte(out), &report); code != 0 || err != nil {
		t.Fatalf("users show %s: exit %d %v %s", user, code, err, errOut)
	}
	if len(report.RecentEvents) != n || report.RecentEvents[0].Provider != provider {
		t.Fatalf("users show %s lists %d events, want the %d %s events sent: %s", user, len(report.RecentEvents), n, provider, out)
	}
	// The store's own event, by the store's name: never tollgate's record of reading it.
	if len(report.Subscriptions) != 1 || report.Subscriptions[0].LastEventType != report.RecentEvents[0].Type {
		t.Errorf("users show %s: the subscription's last event is not its newest event %q: %s", user, report.RecentEvents[0].Type, out)
	}
	for _, ev := range report.RecentEvents {
		if provider == "playstore" && !strings.HasPrefix(ev.Type, "SUBSCRIPTION_") {
			t.Errorf("users show %s names a Google Play event %q, not by Google's name", user, ev.Type)
		}
	}
}
