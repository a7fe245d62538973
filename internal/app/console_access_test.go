package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
	"github.com/tollgate/tollgate/internal/stores"
)

// consoleRoutes are every console route, with a POST's target standing for any.
var consoleRoutes = []struct{ method, path string }{
	{"GET", "/admin"}, {"GET", "/admin/"}, {"GET", "/admin/customers?q=a"}, {"GET", "/admin/customers/00000000-0000-4000-8000-000000000001"},
	{"GET", "/admin/events"}, {"GET", "/admin/events/00000000-0000-4000-8000-000000000001"}, {"GET", "/admin/deliveries"},
	{"GET", "/admin/plans"}, {"GET", "/admin/static/console.css"}, {"GET", "/admin/nothing"},
	{"POST", "/admin/events/00000000-0000-4000-8000-000000000001/replay"}, {"POST", "/admin/deliveries/1/retry"},
	{"POST", "/admin/customers/00000000-0000-4000-8000-000000000001/grants"},
	{"POST", "/admin/customers/00000000-0000-4000-8000-000000000001/grants/00000000-0000-4000-8000-000000000002/revoke"},
}

// signedInClient is a browser-like client signed in through the forms as email.
func signedInClient(t *testing.T, base string, fake *identitytest.Fake, email string) *http.Client {
	t.Helper()
	fake.AddUser(email, "a-good-password")
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(base+"/session", url.Values{"email": {email}, "password": {"a-good-password"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("sign-in as %s: %d to %q", email, resp.StatusCode, resp.Header.Get("Location"))
	}
	return client
}

func fetch(t *testing.T, client *http.Client, method, target string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// TestConsoleAccess: nobody but an operator gets anything from the console, on either
// engine. Signed out, a page sends the browser to sign in (and back); a signed-in user not
// listed gets the site's 404 on every route and POST; an operator's cross-site POST is refused; every page is no-store and framed by
// nobody, and none but the payload view carries a webhook's body or a secret.
func TestConsoleAccess(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			fake := identitytest.New(t)
			chain := newTestChain(t)
			env := consoleEnv(t, chain, map[string]string{"AUTH_URL": fake.URL, "ADMIN_EMAILS": "ops@example.test, second@example.test"})
			if engine == "postgres" {
				env["DATABASE_URL"] = dbtest.PostgresURL(t)
			}
			startServe(t, env)
			base := env["PUBLIC_URL"]
			h := seedConsoleHistory(t, base, fake, chain)

			anonymous := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, _ := fetch(t, anonymous, "GET", base+"/admin/events?outcome=unresolved", nil)
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/session/new?redirect_to=%2Fadmin%2Fevents%3Foutcome%3Dunresolved" {
				t.Fatalf("signed out: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
			}

			outsider := signedInClient(t, base, fake, "customer@example.test")
			_, notFound := fetch(t, outsider, "GET", base+"/no-such-page", nil)
			for _, r := range consoleRoutes {
				resp, body := fetch(t, outsider, r.method, base+r.path, nil)
				if resp.StatusCode != http.StatusNotFound || body != notFound {
					t.Errorf("%s %s for a user not listed: %d, the site's own 404: %v", r.method, r.path, resp.StatusCode, body == notFound)
				}
			}

			operator := signedInClient(t, base, fake, "ops@example.test")
			for _, path := range []string{"/admin/events/not-an-id", "/admin/customers/not-an-id", "/admin/events/00000000-0000-4000-8000-00000000dead", "/admin/nothing"} {
				if resp, _ := fetch(t, operator, "GET", base+path, nil); resp.StatusCode != http.StatusNotFound {
					t.Errorf("an operator's %s: %d, want 404", path, resp.StatusCode)
				}
			}
			// A query no page means, which a database cannot compare either: 400, not 500.
			for _, path := range []string{"/admin/customers?q=a%00b", "/admin/customers?q=%ff%fe", "/admin/events?outcome=%00", "/admin/events?provider%00=web"} {
				if resp, _ := fetch(t, operator, "GET", base+path, nil); resp.StatusCode != http.StatusBadRequest {
					t.Errorf("an operator's %s: %d, want 400", path, resp.StatusCode)
				}
			}
			for _, path := range []string{"/admin/deliveries/1/retry", "/admin/customers/" + h.usd + "/grants?plan=pro&for=30d&reason=x"} {
				resp, _ = fetch(t, operator, "POST", base+path, http.Header{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"https://evil.example"}})
				if resp.StatusCode != http.StatusForbidden {
					t.Errorf("a cross-site POST to %s: %d", path, resp.StatusCode)
				}
			}
			consoleGrantRefusals(t, base, operator, h.usd)
			for _, path := range []string{"/admin", "/admin/customers", "/admin/customers?q=" + h.usd, "/admin/customers/" + h.churned, "/admin/events", "/admin/deliveries", "/admin/plans"} {
				resp, body := fetch(t, operator, "GET", base+path, nil)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%s: %d", path, resp.StatusCode)
				}
				if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("X-Frame-Options") != "DENY" ||
					!strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
					t.Errorf("%s headers: %v", path, resp.Header)
				}
				// Outbound webhooks are off here: their chart says so, not "nothing".
				if path == "/admin" && !strings.Contains(body, "Off: outbound webhooks are not set up (OUTBOUND_WEBHOOK_URL") {
					t.Errorf("with outbound webhooks off the overview does not say so")
				}
				for _, secret := range []string{webSecret, mobileSecret, `"livemode"`, `"event_properties"`, "Bearer", "refresh_token", "access_token"} {
					if strings.Contains(body, secret) {
						t.Errorf("%s shows %q", path, secret)
					}
				}
			}
			unresolvedEventNamesItsCustomer(t, env["DATABASE_URL"], base, operator, h.unmapped)
		})
	}
}

// consoleGrantRefusals: the Grant form refuses what cannot be granted, 422 with why and
// what was typed kept; a grant that is not the customer's is 404; nothing is granted.
func consoleGrantRefusals(t *testing.T, base string, operator *http.Client, user string) {
	t.Helper()
	post := func(path string, form url.Values) (*http.Response, string) {
		t.Helper()
		resp, err := operator.PostForm(base+path, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	for _, c := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"plan": {"platinum"}, "for": {"30d"}, "reason": {"typed reason"}}, "There is no such plan to grant"},
		{url.Values{"plan": {"pro"}, "for": {"soon"}, "reason": {"typed reason"}}, "such as 30d, 12h or 90m"},
		{url.Values{"plan": {"pro"}, "for": {"30d"}, "reason": {" "}}, "Say why, in reason"},
		// What no database stores, and what would overflow: refused before anything is asked of one.
		{url.Values{"plan": {"pro"}, "for": {"213504d"}, "reason": {"typed reason"}}, "at most 36500d (100 years)"},
		{url.Values{"plan": {"pro"}, "for": {"30d"}, "reason": {"typed\x00reason"}}, "without NUL"},
		{url.Values{"plan": {"pro\x00"}, "for": {"30d"}, "reason": {"typed reason"}}, "without NUL"},
	} {
		resp, body := post("/admin/customers/"+user+"/grants", c.form)
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, c.want) || !strings.Contains(body, `value="`+c.form.Get("for")+`"`) {
			t.Errorf("%v: %d, want 422 saying %q with the form kept", c.form, resp.StatusCode, c.want)
		}
	}
	if resp, _ := post("/admin/customers/"+user+"/grants/00000000-0000-4000-8000-0000000000ff/revoke", url.Values{"reason": {"x"}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("revoking no grant: %d", resp.StatusCode)
	}
	if _, page := fetch(t, operator, "GET", base+"/admin/customers/"+user, nil); !strings.Contains(page, "No grants.") {
		t.Error("a refused grant was made")
	}
	// The NUL and the overflow were the request's fault, not the database's.
	if _, metrics := fetch(t, operator, "GET", base+"/metrics", nil); strings.Contains(metrics, "\ntollgate_db_unavailable_total ") &&
		!strings.Contains(metrics, "\ntollgate_db_unavailable_total 0\n") {
		t.Error("refused grants counted as a database outage (tollgate_db_unavailable_total)")
	}
}

// unresolvedEventNamesItsCustomer: a customer whose only event was unresolved (its price in
// no plan) has it on their timeline, with its reason, and is found by its subscription and
// event ids; the event stored the user it names and no canonical row.
func unresolvedEventNamesItsCustomer(t *testing.T, databaseURL, base string, operator *http.Client, user string) {
	t.Helper()
	d, err := db.Open(context.Background(), databaseURL, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var eventID, named string
	var customers int
	if err := d.QueryRow("select provider_event_id, user_id from provider_events where subscription_id = 'sub_console_unmapped'").Scan(&eventID, &named); err != nil || named != user {
		t.Fatalf("the unresolved event names %q, want %s (%v)", named, user, err)
	}
	if err := d.QueryRow("select count(*) from billing_customers where user_id = $1", user).Scan(&customers); err != nil || customers != 0 {
		t.Fatalf("an unresolved event wrote %d billing customers (%v)", customers, err)
	}
	_, page := fetch(t, operator, "GET", base+"/admin/customers/"+user, nil)
	if strings.Contains(page, "No events name this customer") || !strings.Contains(page, "unresolved") || !strings.Contains(page, "unmapped price or product") {
		t.Errorf("the customer's timeline does not list the unresolved event with its reason:\n%s", page)
	}
	for _, q := range []string{"sub_console_unmapped", eventID} {
		if _, found := fetch(t, operator, "GET", base+"/admin/customers?q="+url.QueryEscape(q), nil); !strings.Contains(found, user) {
			t.Errorf("searching %s does not find the customer", q)
		}
	}
}

// Without operators, or without the forms to sign them in, there is no console: /admin is
// the site's own 404 (the forms' page, or the JSON one with the forms off).
func TestConsoleOffWithoutOperatorsOrForms(t *testing.T) {
	for _, tc := range []struct {
		name        string
		vars        map[string]string
		contentType string
	}{
		{"no ADMIN_EMAILS", map[string]string{}, "text/html; charset=utf-8"},
		{"FORMS=off", map[string]string{"ADMIN_EMAILS": "ops@example.test", "FORMS": "off", "API": "off"}, "application/problem+json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.vars["MOBILE_WEBHOOK_SECRET"], tc.vars["WEB_WEBHOOK_SECRET"], tc.vars["AUTH_URL"] = mobileSecret, webSecret, "http://127.0.0.1:1"
			cfg, err := config.Load(func(k string) string { return tc.vars[k] })
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewServer(context.Background(), env{stores: stores.All(), cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil))}, dbtest.SQLite(t))
			if err != nil {
				t.Fatal(err)
			}
			h := s.Handler()
			for _, path := range []string{"/admin", "/admin/customers"} {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != http.StatusNotFound || rec.Header().Get("Content-Type") != tc.contentType {
					t.Errorf("%s: %d %s", path, rec.Code, rec.Header().Get("Content-Type"))
				}
			}
		})
	}
}
