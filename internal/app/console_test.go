package app

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
	"github.com/tollgate/tollgate/internal/outbound/outboundtest"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "rewrite the console's screenshots in docs/console")

// consoleHistory is what TestBrowserConsole seeds through the webhooks: a web subscriber
// in USD, one in EUR, one who churned, a mobile subscriber, an App Store one paying in GBP,
// and an event whose price no plan sells yet.
type consoleHistory struct {
	usd, eur, churned, mobile, appStore, unmapped string // user ids
}

// consoleEnv is the environment of the console's tests: the App Store heard directly too,
// under a test chain.
func consoleEnv(t *testing.T, chain *appstoredev.Chain, vars map[string]string) map[string]string {
	roots := filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(roots, chain.RootPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	vars["APP_ENV"], vars["APPSTORE_BUNDLE_ID"], vars["APPSTORE_ROOT_CERTS"] = "development", "com.example.app", roots
	return testEnv(t, vars)
}

func newTestChain(t *testing.T) *appstoredev.Chain {
	chain, err := appstoredev.New(appstoredev.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return chain
}

func seedConsoleHistory(t *testing.T, base string, fake *identitytest.Fake, chain *appstoredev.Chain) consoleHistory {
	t.Helper()
	now := time.Now().UTC()
	var h consoleHistory
	h.usd, _ = fake.Token("usd@example.test")
	h.eur, _ = fake.Token("eur@example.test")
	h.churned, _ = fake.Token("churned@example.test")
	h.mobile, _ = fake.Token("mobile@example.test")
	h.unmapped, _ = fake.Token("unmapped@example.test")
	h.appStore, _ = fake.Token("appstore@example.test")
	web := func(user, sub, status string, at time.Time, edit func(price map[string]any)) {
		t.Helper()
		body := editFixture(t, "../billing/testdata/web/customer.subscription.updated.json", func(m map[string]any) {
			object := m["data"].(map[string]any)["object"].(map[string]any)
			object["id"], object["customer"], object["status"] = sub, "cus_"+sub, status
			object["metadata"] = map[string]any{"user_id": user}
			if edit != nil {
				for _, item := range object["items"].(map[string]any)["data"].([]any) {
					edit(item.(map[string]any)["price"].(map[string]any))
				}
			}
		})
		body, err := stripe.MoveToNow(body, at)
		if err != nil {
			t.Fatal(err)
		}
		if code, err := postWeb(http.DefaultClient, base, body); code != http.StatusOK {
			t.Fatalf("web event for %s: %d %v", sub, code, err)
		}
	}
	web(h.usd, "sub_console_usd", "active", now.Add(-3*time.Hour), nil)
	web(h.eur, "sub_console_eur", "active", now.Add(-2*time.Hour), func(p map[string]any) { p["currency"], p["unit_amount"] = "eur", 2500 })
	web(h.churned, "sub_console_churn", "active", now.Add(-time.Hour), nil)
	web(h.churned, "sub_console_churn", "canceled", now.Add(-30*time.Minute), nil)
	web(h.unmapped, "sub_console_unmapped", "active", now.Add(-20*time.Minute), func(p map[string]any) { p["id"] = "price_console_unmapped" })

	const mobileTime = "2006-01-02T15:04:05.000000-0700"
	mobile := editFixture(t, "../billing/testdata/mobile/subscription_started.json", func(m map[string]any) {
		m["customer_user_id"] = h.mobile
		m["event_datetime"] = now.Add(-10 * time.Minute).Format(mobileTime)
		props := m["event_properties"].(map[string]any)
		props["purchase_date"] = now.Add(-10 * time.Minute).Format(mobileTime)
		props["subscription_expires_at"] = now.Add(-10*time.Minute).AddDate(0, 1, 0).Format(mobileTime)
	})
	req, _ := http.NewRequest(http.MethodPost, base+"/billing/webhooks/mobile", strings.NewReader(string(mobile)))
	req.Header.Set("Authorization", mobileSecret)
	if status, _, err := send(http.DefaultClient, req); err != nil || status != http.StatusOK {
		t.Fatalf("mobile event: %d %v", status, err)
	}

	purchased := now.Add(-5 * time.Minute)
	body, err := chain.Body(appstoredev.Notification{UUID: "console-as-1", Type: "SUBSCRIBED", Subtype: "INITIAL_BUY", BundleID: "com.example.app", Signed: now,
		Transaction: &appstoredev.Transaction{OriginalTransactionID: "2000000777", TransactionID: "2000000777", BundleID: "com.example.app",
			ProductID: "com.example.app.pro.monthly", AppAccountToken: h.appStore, Purchased: purchased, Expires: purchased.AddDate(0, 1, 0),
			Price: 4990, Currency: "GBP"}})
	if err != nil {
		t.Fatal(err)
	}
	if status, _, err := send(http.DefaultClient, mustRequest(http.MethodPost, base+"/billing/webhooks/appstore", body)); err != nil || status != http.StatusOK {
		t.Fatalf("app store notification: %d %v", status, err)
	}
	return h
}

func mustRequest(method, target string, body []byte) *http.Request {
	req, err := http.NewRequest(method, target, strings.NewReader(string(body)))
	if err != nil {
		panic(err)
	}
	return req
}

// TestBrowserConsole signs an operator in through the forms and walks every console page
// against a seeded history, checking what the pages say against the database.
func TestBrowserConsole(t *testing.T) {
	t.Parallel() // its own server and browser; browser lets two run at once
	ctx := browser(t)
	fake := identitytest.New(t)
	fake.Autoconfirm = true
	receiver := outboundtest.NewReceiver(t)
	chain := newTestChain(t)
	env := consoleEnv(t, chain, map[string]string{
		"AUTH_URL": fake.URL, "ADMIN_EMAILS": "Ops@Example.test",
		"OUTBOUND_WEBHOOK_URL": receiver.URL, "OUTBOUND_WEBHOOK_SECRET": outboundtest.Secret,
	})
	_, logs := startServeLogs(t, env)
	base := env["PUBLIC_URL"]
	h := seedConsoleHistory(t, base, fake, chain)
	d, err := db.Open(context.Background(), env["DATABASE_URL"], time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	scalar := func(query string, args ...any) float64 {
		t.Helper()
		var v float64
		if err := d.QueryRowContext(context.Background(), query, args...).Scan(&v); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return v
	}
	// History the server cannot derive: a snapshot from ten days ago.
	past := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -10)
	if _, err := d.ExecContext(context.Background(), `insert into billing_days (day, provider, plan_key, currency, subscribers, unpriced, mrr_minor)
		values ($1, 'web', 'pro', 'usd', 7, 0, 7000)`, past); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ExecContext(context.Background(), `insert into outbound_deliveries (message_id, user_id, event_type, payload, status, attempts, next_attempt_at, give_up_at, last_error, created_at)
		values ('msg_console_failed', $1, 'entitlements.changed', '{}', 'failed', 9, $2, $2, 'receiver answered 500', $2)`, h.usd, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}

	tab := newTab(t, ctx, base)
	location, textOf, run, eval := tab.location, tab.text, tab.run, tab.eval
	shot := func(name string) chromedp.Action[chromedp.Void] {
		if !*updateScreenshots {
			return chromedp.Steps()
		}
		return chromedp.Steps(
			chromedp.EmulateViewport(1280, 900), docsScreenshot(name+"-1280"),
			chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), docsScreenshot(name+"-390"),
			chromedp.EmulateViewport(1280, 900))
	}

	t.Run("a signed-out browser is sent to sign in, and back", func(t *testing.T) {
		fake.AddUser("ops@example.test", "a-good-password")
		run("open", chromedp.Navigate(base+"/admin/customers"), chromedp.WaitVisible(chromedp.CSS("#email")))
		if !strings.HasPrefix(location(), "/session/new") {
			t.Fatalf("signed out, /admin/customers went to %s", location())
		}
		run("sign in", chromedp.SendKeys(chromedp.CSS("#email"), "ops@example.test"), chromedp.SendKeys(chromedp.CSS("#password"), "a-good-password"),
			chromedp.Submit(chromedp.CSS("#password")), chromedp.WaitVisible(chromedp.CSS("form.filters")))
		if location() != "/admin/customers" {
			t.Fatalf("after sign-in at %s", location())
		}
	})

	t.Run("the overview's numbers are the database's", func(t *testing.T) {
		run("overview", chromedp.Navigate(base+"/admin"), chromedp.WaitReady(chromedp.CSS("main")))
		if !strings.Contains(eval(`document.body.innerHTML`), "chart-active") {
			t.Fatalf("overview: %s\n%s", eval(`document.body.innerText`), logs())
		}
		run("overview", shot("overview"))
		entitling := `from subscriptions s join provider_subscriptions ps on ps.id = s.provider_subscription_id
			join billing_customers c on c.id = s.billing_customer_id
			where s.status in ('active', 'trialing', 'past_due', 'cancelled') and (s.current_period_end is null or s.current_period_end > $1)`
		active := scalar("select count(distinct c.user_id) "+entitling, time.Now().UTC())
		if got := textOf("#total-active"); got != strconv.Itoa(int(active)) || active != 4 {
			t.Fatalf("active subscribers %s on the page, %v people in the database (want 4: usd, eur, mobile, app store)", got, active)
		}
		for _, p := range []string{"web", "mobile", "appstore"} {
			n := scalar("select count(distinct c.user_id) "+entitling+" and s.provider = $2", time.Now().UTC(), p)
			if got := eval(`String([...document.querySelectorAll("#active-now tbody tr")].filter(r => r.cells[0].textContent == "` + p + `").reduce((n, r) => n + Number(r.cells[3].textContent), 0))`); got != strconv.Itoa(int(n)) || n == 0 {
				t.Errorf("active on %s: page %s, database %v", p, got, n)
			}
		}
		for _, cur := range []string{"usd", "eur", "gbp"} {
			minor := scalar("select coalesce(sum(ps.amount), 0) "+entitling+" and ps.currency = $2 and ps.billing_period = 'P1M'", time.Now().UTC(), cur)
			want := fmt.Sprintf("%.2f %s", minor/100, strings.ToUpper(cur))
			if got := textOf(`.mrr-now[data-currency="` + cur + `"]`); got != want || minor == 0 {
				t.Fatalf("MRR in %s: page %q, database %s", cur, got, want)
			}
		}
		churned := scalar(`select count(*) from provider_events where outcome = 'applied' and status_after in ('expired', 'refunded')`)
		newSubs := scalar(`select count(*) from subscriptions`)
		webhooks := scalar(`select count(*) from provider_events`)
		for chart, want := range map[string]float64{"churned": churned, "new": newSubs, "webhooks": webhooks} {
			total := eval(`document.querySelector("#chart-` + chart + `").dataset.total`)
			if got, _ := strconv.ParseFloat(total, 64); got != want || want == 0 {
				t.Errorf("chart %s totals %s, the database %v", chart, total, want)
			}
		}
		pastRow := eval(`(document.querySelector('#chart-active tr[data-day="` + past.Format(time.DateOnly) + `"]') || {}).textContent || ""`)
		if !strings.Contains(pastRow, "7") {
			t.Errorf("the snapshot of %s is not in the active chart: %q", past.Format(time.DateOnly), pastRow)
		}
		if bars := eval(`String(document.querySelectorAll("#chart-webhooks svg rect").length)`); bars == "0" {
			t.Error("the webhooks chart draws no bars")
		}
	})

	t.Run("search finds the customer by e-mail, user id and customer id", func(t *testing.T) {
		// The user's e-mail is known once their token has been seen on the API.
		_, token := fake.Token("usd@example.test")
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/me", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if status, _, err := send(http.DefaultClient, req); status != http.StatusOK {
			t.Fatalf("/api/v1/me: %d %v", status, err)
		}
		// It is recorded off the request path, a moment after the answer.
		for deadline := time.Now().Add(10 * time.Second); scalar("select count(*) from known_users where email = $1", "usd@example.test") == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the API's user was not recorded within 10 s")
			}
		}
		for i, q := range []string{"usd@exa", "USD", h.usd, "cus_sub_console_usd", ""} { // "": the customers seen last
			run("search "+q, chromedp.Navigate(base+"/admin/customers?q="+q), chromedp.WaitVisible(chromedp.CSS("#results")))
			if i == 0 {
				run("shot", shot("customers"))
			}
			if got := textOf("#results tbody"); !strings.Contains(got, h.usd) || !strings.Contains(got, "Pro") || !strings.Contains(got, "web") {
				t.Errorf("search %q: %q", q, got)
			}
		}
		run("search an App Store transaction", chromedp.Navigate(base+"/admin/customers?q=2000000777"), chromedp.WaitVisible(chromedp.CSS("#results")))
		if got := textOf("#results tbody"); !strings.Contains(got, h.appStore) || !strings.Contains(got, "appstore") {
			t.Errorf("search by original transaction: %q", got)
		}
	})

	t.Run("the timeline lists the customer's events with their changes", func(t *testing.T) {
		run("customer", chromedp.Navigate(base+"/admin/customers/"+h.churned), chromedp.WaitVisible(chromedp.CSS("#timeline")), shot("customer"))
		rows := textOf("#timeline tbody")
		canceled, active := strings.Index(rows, "expired"), strings.Index(rows, "none →")
		if canceled < 0 || active < 0 || canceled > active {
			t.Fatalf("timeline, newest first, should show active → expired then none → active:\n%s", rows)
		}
		if !strings.Contains(rows, "pro · active") || strings.Count(rows, "applied") != 2 {
			t.Fatalf("timeline outcomes and changes:\n%s", rows)
		}
		// Each change caused an entitlements.changed delivery, shown on its event's row.
		waitFor(t, func() bool {
			return scalar(`select count(*) from outbound_deliveries where user_id = $1 and status = 'delivered'`, h.churned) == 2
		})
		run("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#timeline")))
		if got := textOf("#timeline tbody"); strings.Count(got, "entitlements.changed: delivered") != 2 {
			t.Fatalf("the deliveries each event caused:\n%s", got)
		}
	})

	t.Run("replay completes an unresolved event once its price is mapped", func(t *testing.T) {
		run("events", chromedp.Navigate(base+"/admin/events?outcome=unresolved"), chromedp.WaitVisible(chromedp.CSS("#events")), shot("events"))
		if got := textOf("#events tbody"); !strings.Contains(got, "unmapped price") {
			t.Fatalf("unresolved events: %q", got)
		}
		if _, err := d.ExecContext(context.Background(), `insert into plan_prices (provider, price_id, plan_id, position, created_at)
			select 'web', 'price_console_unmapped', id, 9, $1 from plans where key = 'pro'`, time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		if _, err := d.ExecContext(context.Background(), `update plans_version set version = version + 1`); err != nil {
			t.Fatal(err)
		}
		run("replay", chromedp.Click(chromedp.CSS("#events tbody button")), chromedp.WaitVisible(chromedp.CSS("#payload")), shot("event"))
		if got := textOf("#outcome"); got != "applied" {
			t.Fatalf("after replay the event is %q", got)
		}
		if n := scalar(`select count(*) from audit_log where actor = 'ops@example.test' and action = 'replay' and result = 'applied' and user_id is not null`); n != 1 {
			t.Fatalf("%v audit rows for the replay", n)
		}
	})

	t.Run("retry re-queues a failed delivery", func(t *testing.T) {
		run("deliveries", chromedp.Navigate(base+"/admin/deliveries"), chromedp.WaitVisible(chromedp.CSS("table.deliveries")), shot("deliveries"),
			chromedp.Click(chromedp.CSS("table.deliveries tbody button")), chromedp.WaitVisible(chromedp.CSS(".notice")))
		if failed := scalar(`select count(*) from outbound_deliveries where message_id = 'msg_console_failed' and status = 'failed'`); failed != 0 {
			t.Fatal("the failed delivery is still failed")
		}
		waitFor(t, func() bool { // queued again, the deliverer sends it
			return scalar(`select count(*) from outbound_deliveries where message_id = 'msg_console_failed' and status = 'delivered'`) == 1
		})
	})

	t.Run("grant a plan and revoke it from the customer page", func(t *testing.T) {
		run("customer", chromedp.Navigate(base+"/admin/customers/"+h.churned), chromedp.WaitVisible(chromedp.CSS("#grant-form")))
		if got := textOf("#plan"); got != "Free" {
			t.Fatalf("before the grant the plan is %q", got)
		}
		run("grant", chromedp.SetValue(chromedp.CSS(`#grant-form select[name="plan"]`), "pro"),
			chromedp.SetValue(chromedp.CSS(`#grant-form input[name="for"]`), "14d"),
			chromedp.SetValue(chromedp.CSS(`#grant-form input[name="reason"]`), "Support: export bug #12"),
			chromedp.Click(chromedp.CSS(`#grant-form button`)), chromedp.WaitVisible(chromedp.CSS(".notice")), shot("customer-grant"))
		if got := textOf("#plan") + " " + textOf("#grant-list tbody"); !strings.HasPrefix(got, "Pro ") || !strings.Contains(got, "active") ||
			!strings.Contains(got, "Support: export bug #12") || !strings.Contains(got, "ops@example.test") {
			t.Fatalf("after the grant: %q", got)
		}
		if n := scalar(`select count(*) from subscriptions where provider = 'grant' and status = 'active'`); n != 1 {
			t.Fatalf("%v live grants in the database", n)
		}
		run("revoke", chromedp.SetValue(chromedp.CSS(`#grant-list input[name="reason"]`), "Fixed in 2.4"),
			chromedp.Click(chromedp.CSS(`#grant-list button`)), chromedp.WaitNotPresent(chromedp.CSS(`#grant-list button`)),
			chromedp.WaitVisible(chromedp.CSS(".notice")))
		if got := textOf("#plan") + " " + textOf("#grant-list tbody"); !strings.HasPrefix(got, "Free ") || !strings.Contains(got, "expired") ||
			!strings.Contains(got, "revoked: Fixed in 2.4") {
			t.Fatalf("after the revocation: %q", got)
		}
		if got := textOf("#timeline tbody"); !strings.Contains(got, "grant.revoked") || !strings.Contains(got, "grant.created") {
			t.Fatalf("the grant's steps on the timeline:\n%s", got)
		}
		acts := textOf("#timeline tr.action")
		if !strings.Contains(acts, "revoke") || !strings.Contains(acts, "grant") || !strings.Contains(acts, "by ops@example.test") {
			t.Fatalf("the grant and revocation on the customer's timeline: %q", acts)
		}
	})

	t.Run("the audit log names the operator, and the customer's timeline shows the replay", func(t *testing.T) {
		run("audit", chromedp.Navigate(base+"/admin/audit"), chromedp.WaitVisible(chromedp.CSS("table.audit")), shot("audit"))
		got := textOf("table.audit tbody")
		for _, action := range []string{"replay", "retry delivery", "grant", "revoke"} {
			if !strings.Contains(got, "ops@example.test") || !strings.Contains(got, action) {
				t.Fatalf("the audit log has no %s by the operator:\n%s", action, got)
			}
		}
		run("audit by action", chromedp.Navigate(base+"/admin/audit?action=replay"), chromedp.WaitVisible(chromedp.CSS("table.audit")))
		if got := textOf("table.audit tbody"); strings.Contains(got, "retry delivery") || !strings.Contains(got, "replay") {
			t.Fatalf("the audit log of replays:\n%s", got)
		}
		var user string
		if err := d.QueryRowContext(context.Background(), `select user_id from audit_log where action = 'replay'`).Scan(&user); err != nil {
			t.Fatal(err)
		}
		run("customer", chromedp.Navigate(base+"/admin/customers/"+user), chromedp.WaitVisible(chromedp.CSS("#timeline")), shot("customer-action"))
		if got := textOf("#timeline tr.action"); !strings.Contains(got, "replay") || !strings.Contains(got, "by ops@example.test") {
			t.Fatalf("the replay on the customer's timeline: %q", got)
		}
	})

	t.Run("plans", func(t *testing.T) {
		run("plans", chromedp.Navigate(base+"/admin/plans"), chromedp.WaitVisible(chromedp.CSS("#plans")), shot("plans"))
		pro := scalar(`select count(*) from subscriptions s join plans p on p.id = s.plan_id where p.key = 'pro' and s.status = 'active'`)
		if got := textOf(`tr[data-plan="pro"] td.subscribers`); !strings.HasPrefix(got, strconv.Itoa(int(pro))) {
			t.Fatalf("pro subscribers %q, database %v", got, pro)
		}
	})

	t.Run("the pages fit a phone", func(t *testing.T) {
		run("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Navigate(base+"/admin"), chromedp.WaitVisible(chromedp.CSS("#chart-active")))
		defer run("back to the desktop", chromedp.EmulateViewport(1280, 900))
		if overflow := eval(`String(document.documentElement.scrollWidth > window.innerWidth + 1)`); overflow == "true" {
			t.Error("the overview is wider than a phone")
		}
		// Every table keeps each row's key cells in view: no sideways scroll inside its
		// frame, and each outcome within the screen.
		for page, table := range map[string]string{"/admin/events": "#events", "/admin/customers/" + h.churned: "#timeline", "/admin/customers": "#results",
			"/admin/deliveries": "table.deliveries", "/admin/plans": "#plans"} {
			run("phone "+page, chromedp.Navigate(base+page), chromedp.WaitVisible(chromedp.CSS(table)))
			wrap := `document.querySelector("` + table + `").closest(".table-wrap")`
			if got := eval(`String(` + wrap + `.scrollWidth - ` + wrap + `.clientWidth)`); got != "0" {
				t.Errorf("%s: the table scrolls sideways by %s px at 390 px", page, got)
			}
			offscreen := eval(`String([...document.querySelectorAll("` + table + ` td.outcome")].filter(td => td.getBoundingClientRect().right > window.innerWidth || td.getBoundingClientRect().width == 0).length)`)
			if offscreen != "0" {
				t.Errorf("%s: %s outcomes off the screen at 390 px", page, offscreen)
			}
			if n := eval(`String(document.querySelectorAll("` + table + ` td.outcome").length)`); table == "#events" && n == "0" {
				t.Errorf("%s: no outcome cells to check", page)
			}
		}
	})
}

// docsScreenshot writes the page to docs/console, for the console's documentation.
func docsScreenshot(name string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, target *chromedp.Target) (chromedp.Void, error) {
		png, err := chromedp.FullScreenshot(100)(ctx, target) // 100: PNG, else JPEG
		if err == nil {
			err = os.WriteFile(filepath.Join("../../docs/console", name+".png"), png, 0o644)
		}
		return chromedp.Void{}, err
	}
}
