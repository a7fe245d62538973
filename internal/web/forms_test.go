package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
	"github.com/tollgate/tollgate/internal/ratelimit"
	"github.com/tollgate/tollgate/internal/route"
)

// TestFormFieldsMatchTheSpec checks every field of every form (docs/forms.md) in the rendered HTML.
func TestFormFieldsMatchTheSpec(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.signIn("reset@example.test", "old-password") // the reset form needs a session
	type field struct {
		name  string
		attrs map[string]string // "" value: present
		not   []string          // attributes that must be absent
	}
	forms := []struct {
		path, action string
		fields       []field
	}{
		{"/session/new?email=a%40b.test", "/session", []field{
			{"email", map[string]string{"type": "email", "required": "", "autofocus": "", "autocomplete": "username", "value": "a@b.test"}, nil},
			{"password", map[string]string{"type": "password", "required": "", "autocomplete": "current-password", "maxlength": "72"}, nil},
		}},
		{"/registration/new?email=a%40b.test", "/registration", []field{
			{"email", map[string]string{"type": "email", "required": "", "autofocus": "", "autocomplete": "username", "value": "a@b.test"}, nil},
			{"password", map[string]string{"type": "password", "required": "", "autocomplete": "new-password", "maxlength": "72"}, nil},
		}},
		{"/passwords/new?email=a%40b.test", "/passwords", []field{
			{"email", map[string]string{"type": "email", "required": "", "autofocus": "", "autocomplete": "username", "value": "a@b.test"}, nil},
		}},
		{"/passwords/anything/edit", "/passwords/anything", []field{
			{"_method", map[string]string{"type": "hidden", "value": "put"}, nil},
			{"password", map[string]string{"type": "password", "required": "", "autocomplete": "new-password", "maxlength": "72"}, nil},
			{"password_confirmation", map[string]string{"type": "password", "required": "", "autocomplete": "new-password", "maxlength": "72"}, nil},
		}},
		{"/otp/new?email=a%40b.test", "/otp", []field{
			{"email", map[string]string{"type": "email", "autofocus": "", "autocomplete": "username", "value": "a@b.test"}, []string{"required"}},
		}},
		{"/otp/verify?email=a%40b.test&phone=%2B15550100", "/otp/verify", []field{
			{"email", map[string]string{"type": "hidden", "value": "a@b.test"}, nil},
			{"phone", map[string]string{"type": "hidden", "value": "+15550100"}, nil},
			{"type", map[string]string{"type": "hidden", "value": "email"}, nil},
			{"token", map[string]string{"type": "text", "required": "", "autofocus": "", "autocomplete": "one-time-code", "inputmode": "numeric"}, nil},
		}},
		{"/otp/verify?type=sms", "/otp/verify", []field{{"type", map[string]string{"type": "hidden", "value": "sms"}, nil}}},
		{"/otp/verify?type=phone_change", "/otp/verify", []field{{"type", map[string]string{"type": "hidden", "value": "phone_change"}, nil}}},
	}
	for _, f := range forms {
		t.Run(f.path, func(t *testing.T) {
			r := h.get(f.path)
			if r.status != http.StatusOK {
				t.Fatalf("%d %s", r.status, r.body)
			}
			page := doc(t, r.body)
			form := find(page, "form", map[string]string{"action": f.action, "method": "post"})
			if len(form) != 1 {
				t.Fatalf("no form posting to %s", f.action)
			}
			for _, fl := range f.fields {
				inputs := find(form[0], "input", map[string]string{"name": fl.name})
				if len(inputs) != 1 {
					t.Fatalf("field %s: %d inputs", fl.name, len(inputs))
				}
				for k, want := range fl.attrs {
					got, ok := attr(inputs[0], k)
					if !ok || (want != "" && got != want) {
						t.Errorf("field %s: %s=%q (present %v), want %q", fl.name, k, got, ok, want)
					}
				}
				for _, k := range fl.not {
					if _, ok := attr(inputs[0], k); ok {
						t.Errorf("field %s has %s", fl.name, k)
					}
				}
			}
			if len(find(page, "link", map[string]string{"rel": "stylesheet", "href": "/static/style.css"})) != 1 {
				t.Error("stylesheet missing")
			}
		})
	}
}

func TestOAuthLinksAndNotices(t *testing.T) {
	h := newHarness(t, harnessOpts{oauth: []string{"github", "google"}})
	page := doc(t, h.get("/session/new").body)
	var links []string
	for _, a := range find(page, "a", nil) {
		if href, _ := attr(a, "href"); strings.HasPrefix(href, "/oauth/") {
			links = append(links, href+" "+text(a))
		}
	}
	want := "/oauth/github/authorize Sign in with GitHub|/oauth/google/authorize Sign in with Google"
	if strings.Join(links, "|") != want {
		t.Fatalf("OAuth links %q, want %q", links, want)
	}
	empty := newHarness(t, harnessOpts{})
	if strings.Contains(empty.get("/session/new").body, "/oauth/") {
		t.Fatal("OAuth links rendered with no providers configured")
	}
	// Reflected parameters are escaped.
	r := h.get("/session/new?email=" + url.QueryEscape(`"><script>alert(1)</script>`))
	if strings.Contains(r.body, "<script>alert") {
		t.Fatal("a reflected parameter was not escaped")
	}
}

func TestSignInAndOut(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := newHarness(t, harnessOpts{db: d})
		h.fake.AddUser("ada@example.test", "correct horse")

		r := h.post("/session", url.Values{"email": {"ada@example.test"}, "password": {"wrong"}})
		if r.status != http.StatusUnprocessableEntity || flash(t, r.body, "alert") != "Invalid credentials" {
			t.Fatalf("wrong password: %d alert %q", r.status, flash(t, r.body, "alert"))
		}
		if len(find(doc(t, r.body), "input", map[string]string{"name": "email", "value": "ada@example.test"})) != 1 {
			t.Fatal("the email was not kept")
		}
		if strings.Contains(r.body, "wrong") {
			t.Fatal("the password was echoed back")
		}

		h.get("/session/new") // an anonymous session exists before sign-in
		before := h.sessionCookie()
		r = h.post("/session", url.Values{"email": {"ada@example.test"}, "password": {"correct horse"}})
		if r.status != http.StatusSeeOther || r.location != "/" {
			t.Fatalf("sign-in: %d %q", r.status, r.location)
		}
		after := h.sessionCookie()
		if after == nil || (before != nil && before.Value == after.Value) {
			t.Fatal("the session id was not renewed at sign-in")
		}
		for _, c := range r.cookies {
			if strings.HasSuffix(c.Name, "tollgate_session") {
				if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure || len(c.Value) < 32 {
					t.Fatalf("cookie %+v", c)
				}
				if strings.Contains(c.Value, ".") {
					t.Fatal("the cookie looks like it carries a token")
				}
			}
		}
		account := h.get("/")
		if account.status != http.StatusOK || !strings.Contains(account.body, "ada@example.test") {
			t.Fatalf("account page: %d", account.status)
		}
		for header, want := range map[string]string{"Cache-Control": "no-store", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"} {
			if account.header.Get(header) != want {
				t.Errorf("%s = %q", header, account.header.Get(header))
			}
		}
		if !strings.Contains(account.header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Error("CSP lacks frame-ancestors")
		}

		old := *h.sessionCookie()
		r = h.post("/session", url.Values{"_method": {"delete"}})
		if r.status != http.StatusSeeOther || r.location != "/session/new" {
			t.Fatalf("sign-out: %d %q", r.status, r.location)
		}
		if n := flash(t, h.get("/session/new").body, "notice"); n != msgSignedOut {
			t.Fatalf("notice after sign-out %q", n)
		}
		if h.fake.Calls("/logout") != 1 {
			t.Fatal("the identity service was not told")
		}
		// Replaying the old cookie finds no session.
		h.newBrowser()
		req, _ := http.NewRequest(http.MethodGet, h.url("/"), nil)
		req.AddCookie(&old)
		if r := h.do(req); r.status != http.StatusSeeOther || r.location != "/session/new" {
			t.Fatalf("old cookie after sign-out: %d %q", r.status, r.location)
		}
	})
}

func TestSecureCookieOutsideDevelopment(t *testing.T) {
	h := newHarness(t, harnessOpts{secure: true})
	h.fake.AddUser("s@example.test", "secret-pass")
	r := h.post("/session", url.Values{"email": {"s@example.test"}, "password": {"secret-pass"}})
	for _, c := range r.cookies {
		if c.Name == "__Host-tollgate_session" {
			if !c.Secure || !c.HttpOnly || c.Path != "/" || c.Domain != "" || c.SameSite != http.SameSiteLaxMode {
				t.Fatalf("cookie %+v", c)
			}
			return
		}
	}
	t.Fatalf("no __Host- session cookie in %v", r.cookies)
}

func TestSignUp(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	r := h.post("/registration", url.Values{"email": {"new@example.test"}, "password": {"abc"}})
	if r.status != http.StatusUnprocessableEntity || flash(t, r.body, "alert") != "Password should be at least 6 characters." {
		t.Fatalf("weak password: %d %q", r.status, flash(t, r.body, "alert"))
	}
	if len(find(doc(t, r.body), "input", map[string]string{"name": "email", "value": "new@example.test"})) != 1 {
		t.Fatal("the email was not kept after WEAK_PASSWORD")
	}

	r = h.post("/registration", url.Values{"email": {"new@example.test"}, "password": {"long enough"}})
	if r.status != http.StatusSeeOther || r.location != "/session/new" || flash(t, h.follow(r).body, "notice") != msgCheckEmail {
		t.Fatalf("sign-up needing confirmation: %d %q", r.status, r.location)
	}
	h.fake.AddUser("taken@example.test", "whatever1")
	r = h.post("/registration", url.Values{"email": {"taken@example.test"}, "password": {"long enough"}})
	if r.status != http.StatusSeeOther || r.location != "/session/new" || flash(t, h.follow(r).body, "notice") != msgCheckEmail {
		t.Fatalf("existing address: %d %q (must look like a new one)", r.status, r.location)
	}

	h.fake.Autoconfirm = true
	r = h.post("/registration", url.Values{"email": {"instant@example.test"}, "password": {"long enough"}})
	if r.status != http.StatusSeeOther || r.location != "/" || !strings.Contains(h.get("/").body, "instant@example.test") {
		t.Fatalf("autoconfirmed sign-up: %d %q", r.status, r.location)
	}
	if got := h.fake.LastRequest("/signup"); got["code_challenge_method"] != "s256" || got["code_challenge"] == "" {
		t.Fatalf("sign-up without PKCE: %v", got)
	}

	h.fake.Autoconfirm = false
	h.fake.FailNext("/signup", 400, "validation_failed", "Unable to validate email address: invalid format")
	r = h.post("/registration", url.Values{"email": {"x@example.test"}, "password": {"long enough"}})
	if flash(t, r.body, "alert") != "Invalid credentials" {
		t.Fatalf("other 4xx: %q", flash(t, r.body, "alert"))
	}
}

func TestLongPasswordsRefusedLocally(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.signIn("long@example.test", "short-enough")
	long := strings.Repeat("€", 24) + "a" // 25 characters, 73 bytes
	calls := h.fake.TotalCalls()
	for _, tc := range []struct{ path, method string }{{"/session", ""}, {"/registration", ""}, {"/passwords/x", "put"}} {
		form := url.Values{"email": {"long@example.test"}, "password": {long}}
		if tc.method != "" {
			form.Set("_method", tc.method)
		}
		r := h.post(tc.path, form)
		if r.status != http.StatusUnprocessableEntity || flash(t, r.body, "alert") != msgPasswordTooLong {
			t.Errorf("%s: %d %q", tc.path, r.status, flash(t, r.body, "alert"))
		}
	}
	if h.fake.TotalCalls() != calls {
		t.Fatal("a 73-byte password reached the identity service")
	}
}

func TestCrossSitePostsAreRefused(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	calls := h.fake.TotalCalls()
	for _, path := range []string{"/session", "/registration", "/passwords", "/otp", "/otp/verify"} {
		r := h.post(path, url.Values{"email": {"victim@example.test"}, "password": {"secret-pass"}}, "Sec-Fetch-Site", "cross-site")
		if r.status != http.StatusForbidden {
			t.Errorf("cross-site POST %s: %d", path, r.status)
		}
		r = h.post(path, url.Values{"email": {"victim@example.test"}}, "Origin", "https://evil.example")
		if r.status != http.StatusForbidden {
			t.Errorf("POST %s from another origin: %d", path, r.status)
		}
	}
	if h.fake.TotalCalls() != calls {
		t.Fatal("a cross-site request reached the identity service")
	}
	if r := h.post("/session", url.Values{"email": {"a@b.test"}, "password": {"x"}}, "Sec-Fetch-Site", "same-origin"); r.status == http.StatusForbidden {
		t.Fatal("a same-origin POST was refused")
	}
	// The access log's line for the refusal names the path refused (the refusal comes
	// before the routes, which otherwise tell it).
	for path, want := range map[string]string{"/registration": "/registration", "/passwords/abc123": "/passwords/{token}"} {
		ctx, matched := route.With(context.Background())
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, path, strings.NewReader("email=a%40b.test"))
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		rec := httptest.NewRecorder()
		h.web.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden || matched.Path != want || matched.Pattern == "" {
			t.Errorf("cross-site POST %s: %d, recorded %+v, want the path %s", path, rec.Code, *matched, want)
		}
	}
}

func TestOpenRedirectsEndAtHome(t *testing.T) {
	for _, target := range []string{"//evil.example", "/\\evil.example", "https://evil.example", "javascript:alert(1)", "/\t/evil.example", "\\\\evil", "/\\/evil.example"} {
		t.Run(target, func(t *testing.T) {
			h := newHarness(t, harnessOpts{})
			h.fake.AddUser("r@example.test", "password1")
			h.get("/session/new?redirect_to=" + url.QueryEscape(target))
			r := h.post("/session", url.Values{"email": {"r@example.test"}, "password": {"password1"}})
			if r.status != http.StatusSeeOther || r.location != "/" {
				t.Fatalf("redirect_to %q: ended at %q", target, r.location)
			}
		})
	}
	h := newHarness(t, harnessOpts{})
	h.fake.AddUser("r@example.test", "password1")
	h.get("/session/new?redirect_to=" + url.QueryEscape("/billing?tab=plans"))
	if r := h.post("/session", url.Values{"email": {"r@example.test"}, "password": {"password1"}}); r.location != "/billing?tab=plans" {
		t.Fatalf("a local redirect_to was not honoured: %q", r.location)
	}
}

func TestPasswordResetFlow(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.fake.AddUser("forgot@example.test", "old-password")

	known := h.post("/passwords", url.Values{"email": {"forgot@example.test"}})
	knownPage := h.follow(known)
	unknown := h.post("/passwords", url.Values{"email": {"nobody@example.test"}})
	unknownPage := h.follow(unknown)
	if known.status != unknown.status || known.location != unknown.location || knownPage.body != unknownPage.body {
		t.Fatal("the reset request reveals whether the address has an account")
	}
	if flash(t, knownPage.body, "notice") != msgResetSent {
		t.Fatalf("notice %q", flash(t, knownPage.body, "notice"))
	}

	h.newBrowser()
	h.post("/passwords", url.Values{"email": {"forgot@example.test"}})
	link := h.emailLink("forgot@example.test", "recovery")
	back := h.get(link) // the identity service redirects to our callback with a code
	callback := h.get(back.location)
	if callback.status != http.StatusSeeOther || !strings.HasPrefix(callback.location, "/passwords/") || !strings.HasSuffix(callback.location, "/edit") {
		t.Fatalf("callback: %d %q", callback.status, callback.location)
	}
	if form := h.get(callback.location); form.status != http.StatusOK || !strings.Contains(form.body, "For the account <strong><span class=\"address\">forgot@example.test</span></strong>") {
		t.Fatalf("the reset form does not say whose password it is: %d\n%s", form.status, form.body)
	}
	r := h.post("/passwords/ignored-segment", url.Values{"_method": {"put"}, "password": {"old-password"}})
	if flash(t, r.body, "alert") != "New password should be different from the old password." {
		t.Fatalf("same password: %q", flash(t, r.body, "alert"))
	}
	r = h.post("/passwords/ignored-segment", url.Values{"_method": {"put"}, "password": {"new-password"}, "password_confirmation": {"ignored"}})
	if r.status != http.StatusSeeOther || r.location != "/" || flash(t, h.follow(r).body, "notice") != msgPasswordUpdated {
		t.Fatalf("update: %d %q", r.status, r.location)
	}
	h.newBrowser()
	r = h.post("/session", url.Values{"email": {"forgot@example.test"}, "password": {"new-password"}})
	if r.location != "/" {
		t.Fatal("the new password does not work")
	}

	// The used link again: the identity service redirects with otp_expired.
	h.newBrowser()
	r = h.get(h.get(link).location)
	if page := h.follow(r).body; r.location != "/session/new" || flash(t, page, "info") != msgLinkUsed || strings.Contains(page, `class="flash alert"`) {
		t.Fatalf("used reset link: %q, not as information", r.location)
	}

	// The link opened in another browser has no verifier: the address is confirmed (the
	// identity service verified the link), sign in here; no session.
	h.newBrowser()
	h.post("/passwords", url.Values{"email": {"forgot@example.test"}})
	link = h.emailLink("forgot@example.test", "recovery")
	h.newBrowser()
	r = h.get(h.get(link).location)
	if page := h.follow(r).body; r.location != "/session/new" || flash(t, page, "info") != msgOtherBrowser || strings.Contains(page, `class="flash notice"`) {
		t.Fatalf("link in another browser: %q, not as information", r.location)
	}
	if got := h.get("/passwords/x/edit"); got.location != "/passwords/new" {
		t.Fatalf("reset form without a recovery session: %q", got.location)
	}
}

func TestOTP(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.fake.CodesInEmails = true // a template with {{ .Token }}
	h.fake.AddUser("code@example.test", "whatever-pass")
	r := h.post("/otp", url.Values{"email": {"code@example.test"}})
	if r.status != http.StatusSeeOther || r.location != "/otp/verify?email=code%40example.test&type=email" {
		t.Fatalf("send: %d %q", r.status, r.location)
	}
	if flash(t, h.get(r.location).body, "notice") != msgLinkSent {
		t.Fatal("the notice does not say an e-mail with a link was sent")
	}
	unknown := h.post("/otp", url.Values{"email": {"stranger@example.test"}})
	if unknown.status != r.status || !strings.HasPrefix(unknown.location, "/otp/verify?") {
		t.Fatalf("unknown address differs: %d %q", unknown.status, unknown.location)
	}

	bad := h.post("/otp/verify", url.Values{"email": {"code@example.test"}, "type": {"email"}, "token": {"000000"}})
	if bad.status != http.StatusUnprocessableEntity || flash(t, bad.body, "alert") != msgCodeWrong || strings.Contains(bad.body, "Token") {
		t.Fatalf("otp_expired: %d %q", bad.status, flash(t, bad.body, "alert"))
	}
	if len(find(doc(t, bad.body), "input", map[string]string{"name": "email", "value": "code@example.test"})) != 1 {
		t.Fatal("the hidden email was not kept")
	}
	code := h.fake.OTP("code@example.test")
	if len(code) != 6 {
		t.Fatalf("no code in an email whose template shows it: %q", code)
	}
	ok := h.post("/otp/verify", url.Values{"email": {"code@example.test"}, "type": {"email"}, "token": {code}})
	if ok.status != http.StatusSeeOther || ok.location != "/" {
		t.Fatalf("verify: %d %q", ok.status, ok.location)
	}

	// SMS: the phone param of the request action, type sms on the verify form.
	h.newBrowser()
	r = h.post("/otp", url.Values{"phone": {"+15550100"}}) // unknown number: otp_disabled upstream, same outcome here

	if r.status != http.StatusSeeOther || r.location != "/otp/verify?phone=%2B15550100&type=sms" {
		t.Fatalf("sms send: %d %q", r.status, r.location)
	}
	h.fake.FailNext("/otp", 429, "over_sms_send_rate_limit", "rate limit")
	if r := h.post("/otp", url.Values{"phone": {"+15550100"}}); r.status != http.StatusTooManyRequests {
		t.Fatalf("rate-limited send: %d", r.status)
	}
}

// TestEmailLinkSignIn: with Supabase Auth's default template the e-mail holds only a link.
// It must come back through the callback and sign in the browser that asked for it.
func TestEmailLinkSignIn(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.fake.AddUser("link@example.test", "whatever-pass")
	h.post("/otp", url.Values{"email": {"link@example.test"}})
	if got := h.fake.LastRequest("/otp"); got["code_challenge_method"] != "s256" || len(str(got["code_challenge"])) != 43 {
		t.Fatalf("POST /otp without PKCE: %v", got)
	}
	if h.fake.OTP("link@example.test") != "" {
		t.Fatal("the default template showed a code")
	}
	verifyPage := h.get("/otp/verify?email=link%40example.test&type=email")
	if !strings.Contains(verifyPage.body, "Follow the sign-in link") {
		t.Fatal("the verify page does not mention the link")
	}
	link := h.emailLink("link@example.test", "magiclink")
	if !strings.Contains(link, "token=pkce_") || !strings.Contains(link, url.QueryEscape(h.srv.URL+"/oauth/callback")) {
		t.Fatalf("link %q is not a PKCE link back to the callback", link)
	}
	back := h.get(link)
	if !strings.HasPrefix(back.location, h.srv.URL+"/oauth/callback?code=") || strings.Contains(back.location, "access_token") {
		t.Fatalf("identity service redirect %q", back.location)
	}
	done := h.get(back.location)
	if done.status != http.StatusSeeOther || done.location != "/" || !strings.Contains(h.get("/").body, "link@example.test") {
		t.Fatalf("callback: %d %q", done.status, done.location)
	}

	// The same link again, in a fresh browser: used.
	h.newBrowser()
	r := h.get(h.get(link).location)
	if r.location != "/session/new" || flash(t, h.follow(r).body, "info") != msgLinkUsed {
		t.Fatalf("used link: %q", r.location)
	}

	// A wrong link first (an older flow's code) leaves the verifier: the right one still works.
	h.newBrowser()
	h.post("/otp", url.Values{"email": {"link@example.test"}})
	first := h.emailLink("link@example.test", "magiclink")
	h.post("/otp", url.Values{"email": {"link@example.test"}}) // a second request replaces the verifier and the link
	r = h.get(h.get(first).location)
	if flash(t, h.follow(r).body, "info") != msgLinkUsed {
		t.Fatal("the replaced link did not say so")
	}
	second := h.emailLink("link@example.test", "magiclink")
	if done := h.get(h.get(second).location); done.location != "/" {
		t.Fatalf("the newest link after a failed one: %q", done.location)
	}
}

// TestSignUpConfirmationLink: the confirmation e-mail's link signs in the browser that
// signed up; in another browser, or after the identity service's flow state expired, it
// still confirmed the address, and the page says so.
func TestSignUpConfirmationLink(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.post("/registration", url.Values{"email": {"confirm@example.test"}, "password": {"long enough"}})
	back := h.get(h.emailLink("confirm@example.test", "signup"))
	if done := h.get(back.location); done.location != "/" || !strings.Contains(h.get("/").body, "confirm@example.test") {
		t.Fatalf("confirmation in the same browser: %q", done.location)
	}

	h.newBrowser()
	h.post("/registration", url.Values{"email": {"elsewhere@example.test"}, "password": {"long enough"}})
	link := h.emailLink("elsewhere@example.test", "signup")
	h.newBrowser()
	r := h.get(h.get(link).location)
	if page := h.follow(r).body; r.location != "/session/new" || flash(t, page, "info") != msgOtherBrowser || strings.Contains(page, `class="flash notice"`) {
		t.Fatalf("confirmation in another browser: %q, not as information", r.location)
	}
	if r := h.post("/session", url.Values{"email": {"elsewhere@example.test"}, "password": {"long enough"}}); r.location != "/" {
		t.Fatal("the confirmed address cannot sign in")
	}

	h.newBrowser()
	h.fake.FlowStateExpiry = time.Nanosecond
	h.post("/registration", url.Values{"email": {"late@example.test"}, "password": {"long enough"}})
	r = h.get(h.get(h.emailLink("late@example.test", "signup")).location)
	if r.location != "/session/new" || flash(t, h.follow(r).body, "notice") != msgEmailConfirmed {
		t.Fatalf("confirmation after the flow state expired: %q", r.location)
	}
}

func TestCallbackOutcomes(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, tc := range []struct{ query, alert string }{
		{"error_code=flow_state_not_found&error_description=No+valid+flow+state+found+for+user.", msgLinkProblem},
		{"error=access_denied&error_description=The+user+denied+the+request", msgCancelled},
		{"error=access_denied&error_code=signup_disabled&error_description=Signups+not+allowed", msgSignInFailed},
		{"error=server_error&error_description=Unexpected+failure", msgSignInFailed},
		{"", msgSignInFailed},
	} {
		r := h.get("/oauth/callback?" + tc.query)
		if r.status != http.StatusSeeOther || r.location != "/session/new" || flash(t, h.follow(r).body, "alert") != tc.alert {
			t.Errorf("callback ?%s: %d %q, want alert %q", tc.query, r.status, r.location, tc.alert)
		}
	}
	// A used link (a confirmation opened twice, most often): information, not an alarm; in
	// the browser it signed in, that the address is confirmed.
	const used = "/oauth/callback?error=access_denied&error_code=otp_expired&error_description=Email+link+is+invalid+or+has+expired"
	if r := h.get(used); r.location != "/session/new" || flash(t, h.follow(r).body, "info") != msgLinkUsed || strings.Contains(h.follow(r).body, `class="flash alert"`) {
		t.Errorf("a used link: %q, not as information", r.location)
	}
	// An OAuth provider that vouched for no address: a step is left, nothing failed.
	r := h.get("/oauth/callback?error=access_denied&error_code=provider_email_needs_verification&error_description=Unverified+email")
	if page := h.follow(r).body; flash(t, page, "notice") != msgConfirmProviderEmail || strings.Contains(page, msgSignInFailed) {
		t.Errorf("provider_email_needs_verification:\n%s", page)
	}
}

func TestOAuthPKCE(t *testing.T) {
	h := newHarness(t, harnessOpts{oauth: []string{"github", "gitlab"}})
	r := h.get("/oauth/github/authorize")
	u, err := url.Parse(r.location)
	if r.status != http.StatusFound || err != nil || !strings.HasPrefix(r.location, h.fake.URL+"/authorize?") {
		t.Fatalf("authorize: %d %q", r.status, r.location)
	}
	q := u.Query()
	if q.Get("provider") != "github" || q.Get("redirect_to") != h.srv.URL+"/oauth/callback" || q.Get("code_challenge_method") != "s256" || len(q.Get("code_challenge")) != 43 {
		t.Fatalf("authorize query %v", q)
	}
	if strings.Contains(r.location, "verifier") {
		t.Fatal("the verifier left the server")
	}
	back := h.get(r.location)
	done := h.get(back.location)
	if done.status != http.StatusSeeOther || done.location != "/" || !strings.Contains(h.get("/").body, "github-user@example.test") {
		t.Fatalf("callback: %d %q", done.status, done.location)
	}
	// The same callback again (the back button): signed in already, nothing to exchange.
	calls := h.fake.Calls("/token?grant_type=pkce")
	if replay := h.get(back.location); replay.location != "/" || h.fake.Calls("/token?grant_type=pkce") != calls {
		t.Fatalf("callback replay: %d %q", replay.status, replay.location)
	}

	// A code whose challenge does not match our verifier: bad_code_verifier, no session;
	// the browser's own flow still completes afterwards.
	h.newBrowser()
	own := h.get("/oauth/github/authorize") // puts a verifier in this browser's session
	foreign := h.get(h.fake.URL + "/authorize?provider=github&code_challenge=not-ours&code_challenge_method=s256&redirect_to=" + url.QueryEscape(h.srv.URL+"/oauth/callback"))
	r = h.get(foreign.location)
	if r.location != "/session/new" || !strings.Contains(flash(t, h.follow(r).body, "alert"), "expired or was already used") {
		t.Fatalf("bad_code_verifier: %q", r.location)
	}
	if got := h.get("/"); got.location != "/session/new" {
		t.Fatal("a session exists after bad_code_verifier")
	}
	if done := h.get(h.get(own.location).location); done.location != "/" {
		t.Fatalf("own flow after a foreign code: %q", done.location)
	}

	// The user turns the provider's consent down.
	h.newBrowser()
	h.fake.DenyOAuth = true
	r = h.get(h.get(h.get("/oauth/github/authorize").location).location)
	if r.location != "/session/new" || flash(t, h.follow(r).body, "alert") != msgCancelled {
		t.Fatalf("denied consent: %q", r.location)
	}

	// Providers not configured here never reach the identity service.
	calls = h.fake.TotalCalls()
	for _, provider := range []string{"google", "GitHub", "..%2F..%2Fadmin"} {
		r := h.get("/oauth/" + provider + "/authorize")
		if r.status != http.StatusNotFound || r.location != "" || !strings.Contains(r.header.Get("Content-Type"), "text/html") {
			t.Errorf("unconfigured provider %q: %d %q", provider, r.status, r.location)
		}
	}
	if h.fake.TotalCalls() != calls {
		t.Fatal("an unconfigured provider reached the identity service")
	}
}

func TestIdentityServiceOutages(t *testing.T) {
	for _, mode := range []int{identitytest.Down, identitytest.Garbage, identitytest.Slow} {
		h := newHarness(t, harnessOpts{})
		h.fake.SetMode(mode)
		r := h.post("/session", url.Values{"email": {"kept@example.test"}, "password": {"never-shown"}})
		if r.status != http.StatusServiceUnavailable || flash(t, r.body, "alert") != unavailable("session_new") {
			t.Fatalf("mode %d: %d %q", mode, r.status, flash(t, r.body, "alert"))
		}
		for path, form := range map[string]string{"/registration": "Sign-up", "/passwords": "Password reset"} {
			if mode != identitytest.Down {
				break
			}
			r := h.post(path, url.Values{"email": {"kept@example.test"}, "password": {"never-shown"}})
			if r.status != http.StatusServiceUnavailable || !strings.HasPrefix(flash(t, r.body, "alert"), form+" is temporarily unavailable") {
				t.Errorf("mode %d, POST %s: %d %q, want %s named", mode, path, r.status, flash(t, r.body, "alert"), form)
			}
		}
		page := doc(t, r.body)
		if len(find(page, "input", map[string]string{"name": "email", "value": "kept@example.test"})) != 1 {
			t.Fatalf("mode %d: email not kept", mode)
		}
		if strings.Contains(r.body, "never-shown") || strings.Contains(r.body, "Bad gateway") || strings.Contains(r.body, "internal error") {
			t.Fatalf("mode %d: password or upstream text in the page", mode)
		}
		if mode == identitytest.Down {
			r = h.post("/otp", url.Values{"email": {"kept@example.test"}})
			if r.status != http.StatusServiceUnavailable {
				t.Fatalf("otp while down: %d", r.status)
			}
		}
	}
}

func TestFormThrottlePerEmail(t *testing.T) {
	h := newHarness(t, harnessOpts{perEmail: ratelimit.Limit{Name: "forms/email", Requests: 3, Window: time.Minute}})
	for i := range 3 {
		if r := h.post("/session", url.Values{"email": {"Target@example.test"}, "password": {"guess"}}); r.status == http.StatusTooManyRequests {
			t.Fatalf("attempt %d throttled", i+1)
		}
	}
	calls := h.fake.Calls("/token")
	r := h.post("/session", url.Values{"email": {"target@example.test"}, "password": {"guess"}})
	if r.status != http.StatusTooManyRequests || !strings.Contains(r.body, "Too many attempts") || r.header.Get("Retry-After") == "" {
		t.Fatalf("4th attempt: %d", r.status)
	}
	if h.fake.Calls("/token") != calls {
		t.Fatal("a throttled attempt reached the identity service")
	}
	if r := h.post("/session", url.Values{"email": {"someone-else@example.test"}, "password": {"guess"}}); r.status == http.StatusTooManyRequests {
		t.Fatal("another address was throttled")
	}
}

// TestRefreshIsSingleFlight: 20 parallel requests of one session whose access token is
// about to expire cause exactly one refresh; a second would revoke the token family.
func TestRefreshIsSingleFlight(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := newHarness(t, harnessOpts{db: d})
		h.fake.TokenTTL = 30 * time.Second // inside the refresh window
		h.signIn("busy@example.test", "password1")
		h.fake.TokenTTL = time.Hour
		var wg sync.WaitGroup
		statuses := make([]int, 20)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = h.get("/").status
			}()
		}
		wg.Wait()
		for i, s := range statuses {
			if s != http.StatusOK {
				t.Fatalf("request %d: %d", i, s)
			}
		}
		if n := h.fake.Calls("/token?grant_type=refresh_token"); n != 1 {
			t.Fatalf("%d refresh calls, want exactly 1", n)
		}
		if h.get("/").status != http.StatusOK {
			t.Fatal("the session did not survive the refresh")
		}
	})
}

func TestLookupUser(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	id := h.fake.AddUser("lookup@example.test", "password1")
	s, err := h.web.opts.Identity.SignInWithPassword(t.Context(), "lookup@example.test", "password1")
	if err != nil {
		t.Fatal(err)
	}
	u, err := h.web.LookupUser(t.Context(), s.AccessToken)
	if err != nil || u == nil || u.ID != id {
		t.Fatalf("explicit token: %+v %v", u, err)
	}
	if _, err := h.web.LookupUser(t.Context(), "not-a-token"); err == nil {
		t.Fatal("a bad token was accepted")
	}

	// No token: the session's. A session without one gives nothing.
	session := func() context.Context {
		t.Helper()
		token := ""
		if c := h.sessionCookie(); c != nil {
			token = c.Value
		}
		ctx, err := h.web.sessions.Load(t.Context(), token)
		if err != nil {
			t.Fatal(err)
		}
		return ctx
	}
	if u, err := h.web.LookupUser(session(), ""); u != nil || err != nil {
		t.Fatalf("no token, no signed-in session: %+v %v", u, err)
	}
	h.signIn("session@example.test", "password1")
	refreshes := h.fake.Calls("/token?grant_type=refresh_token")
	if u, err := h.web.LookupUser(session(), ""); err != nil || u == nil || u.Email != "session@example.test" {
		t.Fatalf("the session's user: %+v %v", u, err)
	}
	if h.fake.Calls("/token?grant_type=refresh_token") != refreshes {
		t.Fatal("a fresh access token was refreshed")
	}

	// Near expiry, the session's token is refreshed first.
	h.newBrowser()
	h.fake.TokenTTL = 30 * time.Second // inside the refresh window
	h.signIn("expiring@example.test", "password1")
	h.fake.TokenTTL = time.Hour
	if u, err := h.web.LookupUser(session(), ""); err != nil || u == nil || u.Email != "expiring@example.test" {
		t.Fatalf("the session's user near expiry: %+v %v", u, err)
	}
	if n := h.fake.Calls("/token?grant_type=refresh_token") - refreshes; n != 1 {
		t.Fatalf("%d refreshes near expiry, want 1", n)
	}
}

func TestExpiredSessionsAreDeleted(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.signIn("tidy@example.test", "password1")
	if _, err := h.db.Exec("update web_sessions set expiry = $1", time.Now().Add(-time.Hour).UTC()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	go h.web.RunSessionCleanup(ctx, 10*time.Millisecond)
	defer cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		h.db.QueryRow("select count(*) from web_sessions").Scan(&n)
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d expired sessions remain", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := h.get("/"); r.location != "/session/new" {
		t.Fatal("an expired session still signs in")
	}
}

// TestFormsWhenTheDatabaseIsDown: the session store cannot load or save, so no handler
// runs; the form the request came from answers the 503 page with Retry-After and its
// values, except passwords, and the outage is logged once.
func TestFormsWhenTheDatabaseIsDown(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := newHarness(t, harnessOpts{db: d})
		d.WatchRequests(time.Second, slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})), nil)
		h.signIn("down@example.test", "password1")
		d.Close()

		for _, tc := range []struct {
			path   string
			form   url.Values
			kept   map[string]string // input name → value
			absent string
		}{
			{"/session", url.Values{"email": {"down@example.test"}, "password": {"never-shown-1"}}, map[string]string{"email": "down@example.test"}, "never-shown-1"},
			{"/registration", url.Values{"email": {"new@example.test"}, "password": {"never-shown-2"}}, map[string]string{"email": "new@example.test"}, "never-shown-2"},
			{"/otp/verify", url.Values{"email": {"down@example.test"}, "type": {"email"}, "token": {"123456"}}, map[string]string{"email": "down@example.test", "type": "email"}, ""},
			{"/passwords/abc", url.Values{"_method": {"put"}, "password": {"never-shown-3"}}, map[string]string{"_method": "put"}, "never-shown-3"},
		} {
			r := h.post(tc.path, tc.form)
			if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") ||
				!strings.HasSuffix(flash(t, r.body, "alert"), " is temporarily unavailable. Please try again in a moment.") {
				t.Fatalf("POST %s with the database down: %d %q %q", tc.path, r.status, r.header.Get("Retry-After"), r.body)
			}
			for name, value := range tc.kept {
				if len(find(doc(t, r.body), "input", map[string]string{"name": name, "value": value})) != 1 {
					t.Errorf("POST %s: %s=%q not kept", tc.path, name, value)
				}
			}
			if tc.absent != "" && strings.Contains(r.body, tc.absent) {
				t.Errorf("POST %s: the password is in the page", tc.path)
			}
		}
		if r := h.get("/"); r.status != http.StatusServiceUnavailable || flash(t, r.body, "alert") != unavailable("account") {
			t.Fatalf("account page with the database down: %d", r.status)
		}
		if n := strings.Count(h.logs.String(), "level=WARN msg=\"database unavailable"); n != 1 {
			t.Fatalf("the outage was logged %d times, want once:\n%s", n, h.logs)
		}
		if strings.Contains(h.logs.String(), "level=ERROR") {
			t.Fatalf("per-request errors were logged:\n%s", h.logs)
		}
	})
}
