package app

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tollgate/tollgate/internal/identity/identitytest"
)

// screenshotDir collects a picture of each form for people to look at (git ignores it).
const screenshotDir = "../../screenshots"

func chromiumPath(t *testing.T) string {
	for _, p := range []string{os.Getenv("CHROMIUM_PATH"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed; CI must install it (apt-get install chromium)")
	}
	t.Skip("chromium not installed: browser tests skipped")
	return ""
}

// browsers lets two browsers run at once, one per core: the browser tests mostly wait, on
// their server and on Chromium, but many Chromiums at once would starve each other.
var browsers = make(chan struct{}, 2)

// browser starts headless Chromium with flags that keep it off the network, once one of
// the browsers' places is free; the place is freed when the test ends.
func browser(t *testing.T) context.Context {
	t.Helper()
	browsers <- struct{}{}
	t.Cleanup(func() { <-browsers })
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(900, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	return ctx
}

// tab drives the browser for one test: each step within 20 s, failures saying where the
// page was.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string
}

// newTab starts the browser (without a deadline: the first start takes a while).
func newTab(t *testing.T, ctx context.Context, base string) tab {
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	return tab{t, ctx, base}
}

// location is the page's URL without the base.
func (b tab) location() string {
	u, _ := chromedp.Run(b.ctx, chromedp.Location())
	return strings.TrimPrefix(u, b.base)
}

// text is the text of the element sel selects.
func (b tab) text(sel string) string {
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("read %s: %v (at %s)", sel, err, b.location())
	}
	return s
}

// eval is what the JavaScript js evaluates to, a string.
func (b tab) eval(js string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		b.t.Fatalf("%s: %v (at %s)", js, err, b.location())
	}
	return v
}

// run does the steps of one named step.
func (b tab) run(step string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v (at %s)", step, err, b.location())
	}
}

func screenshot(name string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		png, err := chromedp.FullScreenshot(100)(ctx, t)
		if err == nil {
			err = os.MkdirAll(screenshotDir, 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(screenshotDir, name+".png"), png, 0o644)
		}
		return chromedp.Void{}, err
	}
}

// TestBrowserJourneys walks every form in a real browser against the real server.
func TestBrowserJourneys(t *testing.T) {
	t.Parallel() // its own server and browser; browser lets two run at once
	ctx := browser(t)
	fake := identitytest.New(t)
	env := testEnv(t, map[string]string{
		"APP_ENV": "development", "AUTH_URL": fake.URL, "OAUTH_PROVIDERS": "github,google",
	})
	startServe(t, env)
	base := env["PUBLIC_URL"]

	tab := newTab(t, ctx, base)
	location, textOf, run := tab.location, tab.text, tab.run

	t.Run("sign-up lands on the account page", func(t *testing.T) {
		fake.Autoconfirm = true
		run("sign-up", chromedp.Navigate(base+"/registration/new"), chromedp.WaitVisible(chromedp.CSS("#email")), screenshot("sign-up"),
			chromedp.SendKeys(chromedp.CSS("#email"), "browser@example.test"),
			chromedp.SendKeys(chromedp.CSS("#password"), "a-good-password"),
			chromedp.Submit(chromedp.CSS("#password")),
			chromedp.WaitVisible(chromedp.CSS("dl.account")), screenshot("account"))
		if location() != "/" || !strings.Contains(textOf("dl.account"), "browser@example.test") || !strings.Contains(textOf("dl.account"), "Free") {
			t.Fatalf("account page at %s: %q", location(), textOf("dl.account"))
		}
	})

	t.Run("sign-out, then a wrong and a right password", func(t *testing.T) {
		run("sign-out", chromedp.Click(chromedp.CSS("form button.secondary")), chromedp.WaitVisible(chromedp.CSS(".notice")))
		if location() != "/session/new" || textOf(".notice") != "You have been signed out." {
			t.Fatalf("after sign-out at %s", location())
		}
		run("wrong password", chromedp.SendKeys(chromedp.CSS("#email"), "browser@example.test"),
			chromedp.SendKeys(chromedp.CSS("#password"), "not-the-password"),
			chromedp.Submit(chromedp.CSS("#password")), chromedp.WaitVisible(chromedp.CSS(".alert")), screenshot("sign-in-alert"))
		if textOf(".alert") != "Invalid credentials" {
			t.Fatalf("alert %q", textOf(".alert"))
		}
		kept, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#email")))
		if kept != "browser@example.test" {
			t.Fatalf("email field %q", kept)
		}
		run("right password", chromedp.SendKeys(chromedp.CSS("#password"), "a-good-password"),
			chromedp.Submit(chromedp.CSS("#password")), chromedp.WaitVisible(chromedp.CSS("dl.account")))
		run("sign out again", chromedp.Click(chromedp.CSS("form button.secondary")), chromedp.WaitVisible(chromedp.CSS("#email")),
			screenshot("sign-in"))
	})

	t.Run("one-time code", func(t *testing.T) {
		fake.CodesInEmails = true // a template with {{ .Token }}
		defer func() { fake.CodesInEmails = false }()
		run("request", chromedp.Navigate(base+"/otp/new"), chromedp.WaitVisible(chromedp.CSS("#email")), screenshot("otp-request"),
			chromedp.SendKeys(chromedp.CSS("#email"), "browser@example.test"),
			chromedp.Submit(chromedp.CSS("#email")), chromedp.WaitVisible(chromedp.CSS("#token")), screenshot("otp-verify"))
		if textOf(".notice") != "We sent you an email." {
			t.Fatalf("notice %q", textOf(".notice"))
		}
		run("verify", chromedp.SendKeys(chromedp.CSS("#token"), fake.OTP("browser@example.test")),
			chromedp.Submit(chromedp.CSS("#token")), chromedp.WaitVisible(chromedp.CSS("dl.account")))
		run("sign out", chromedp.Click(chromedp.CSS("form button.secondary")), chromedp.WaitVisible(chromedp.CSS("#email")))
	})

	t.Run("email link sign-in, then the used link", func(t *testing.T) {
		run("request", chromedp.Navigate(base+"/otp/new"), chromedp.WaitVisible(chromedp.CSS("#email")),
			chromedp.SendKeys(chromedp.CSS("#email"), "browser@example.test"),
			chromedp.Submit(chromedp.CSS("#email")), chromedp.WaitVisible(chromedp.CSS("#token")), screenshot("otp-link-sent"))
		if !strings.Contains(textOf("p.hint"), "Follow the sign-in link") {
			t.Fatalf("hint %q", textOf("p.hint"))
		}
		e, ok := fake.LastEmail("browser@example.test")
		if !ok || e.Type != "magiclink" || e.Code != "" {
			t.Fatalf("default-template email %+v", e)
		}
		run("open link", chromedp.Navigate(e.Link), chromedp.WaitVisible(chromedp.CSS("dl.account")))
		if location() != "/" || !strings.Contains(textOf("dl.account"), "browser@example.test") {
			t.Fatalf("after the link at %s", location())
		}
		run("sign out", chromedp.Click(chromedp.CSS("form button.secondary")), chromedp.WaitVisible(chromedp.CSS("#email")))
		run("open it again", chromedp.Navigate(e.Link), chromedp.WaitVisible(chromedp.CSS(".flash.info")), screenshot("used-link"))
		// The browser keeps the identity service's error fragment across our redirect
		// (#error=…&error_code=otp_expired…); the page takes it out of the address bar
		// once it has shown what it meant.
		if !strings.Contains(textOf(".flash.info"), "That link was already used, or has expired") {
			t.Fatalf("used link at %s: %q", location(), textOf(".flash.info"))
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.location.hash === "" && window.location.pathname === "/session/new"`,
			chromedp.WithPollingTimeout(5*time.Second))); err != nil {
			t.Fatalf("the error fragment stays in the address bar: %s (%v)", location(), err)
		}
		if location() != "/session/new" {
			t.Fatalf("after the used link the address bar says %s", location())
		}
		if strings.Contains(location(), "access_token") {
			t.Fatalf("a token in the URL: %s", location())
		}
	})

	t.Run("password reset from the emailed link", func(t *testing.T) {
		run("request", chromedp.Navigate(base+"/passwords/new"), chromedp.WaitVisible(chromedp.CSS("#email")), screenshot("password-request"),
			chromedp.SendKeys(chromedp.CSS("#email"), "browser@example.test"),
			chromedp.Submit(chromedp.CSS("#email")), chromedp.WaitVisible(chromedp.CSS(".notice")))
		e, ok := fake.LastEmail("browser@example.test")
		if !ok || e.Type != "recovery" {
			t.Fatalf("no reset email: %+v", e)
		}
		link := e.Link
		run("open link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#password_confirmation")), screenshot("password-reset"))
		if !strings.HasPrefix(location(), "/passwords/") {
			t.Fatalf("reset form at %s", location())
		}
		// The confirmation is checked in the browser: a mismatch blocks submission.
		run("mismatch", chromedp.SendKeys(chromedp.CSS("#password"), "brand-new-password"),
			chromedp.SendKeys(chromedp.CSS("#password_confirmation"), "something-else"))
		valid, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#password_confirmation").checkValidity()`))
		if valid {
			t.Fatal("mismatched confirmation passed the client-side check")
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { document.querySelector("#password_confirmation").value = ""; return true })()`)); err != nil {
			t.Fatal(err)
		}
		run("new password", chromedp.SendKeys(chromedp.CSS("#password_confirmation"), "brand-new-password"),
			chromedp.Submit(chromedp.CSS("#password")), chromedp.WaitVisible(chromedp.CSS("dl.account")))
		if textOf(".notice") != "Your password has been updated" {
			t.Fatalf("notice %q", textOf(".notice"))
		}
		run("sign out", chromedp.Click(chromedp.CSS("form button.secondary")), chromedp.WaitVisible(chromedp.CSS("#email")),
			chromedp.SendKeys(chromedp.CSS("#email"), "browser@example.test"),
			chromedp.SendKeys(chromedp.CSS("#password"), "brand-new-password"),
			chromedp.Submit(chromedp.CSS("#password")), chromedp.WaitVisible(chromedp.CSS("dl.account")))
		run("sign out", chromedp.Click(chromedp.CSS("form button.secondary")), chromedp.WaitVisible(chromedp.CSS("#email")))
	})

	t.Run("OAuth link through the identity service", func(t *testing.T) {
		run("click", chromedp.Navigate(base+"/session/new"), chromedp.WaitVisible(chromedp.CSS(".oauth")),
			chromedp.Click(chromedp.CSS(`a[href="/oauth/github/authorize"]`)), chromedp.WaitVisible(chromedp.CSS("dl.account")))
		if !strings.Contains(textOf("dl.account"), "github-user@example.test") {
			t.Fatalf("account after OAuth: %q", textOf("dl.account"))
		}
	})
}

// TestBrowserBrandedForms shows the forms under a team's brand: its name, colour, logo and
// a template of its own from TEMPLATES_DIR. The screenshots are the docs' examples.
func TestBrowserBrandedForms(t *testing.T) {
	t.Parallel() // its own server and browser; browser lets two run at once
	ctx := browser(t)
	fake := identitytest.New(t)
	fake.Autoconfirm = true
	brand := t.TempDir()
	os.WriteFile(filepath.Join(brand, "logo.svg"), []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="160" height="32" viewBox="0 0 160 32">`+
		`<rect width="32" height="32" rx="8" fill="#d9480f"/><text x="42" y="23" font-family="sans-serif" font-size="20" font-weight="700" fill="#1c2430">Acme Cloud</text></svg>`), 0o644)
	os.WriteFile(filepath.Join(brand, "otp_new.html"), []byte(`{{define "content"}}{{template "notice" .}}
<p class="hint">Acme sends you a 6-digit code. Questions? support@acme.test</p>
<form method="post" action="/otp"><label for="email">Work email</label>
<input type="email" id="email" name="email" value="{{.Email}}" autofocus><button type="submit">Email me a code</button></form>{{end}}`), 0o644)
	env := testEnv(t, map[string]string{
		"APP_ENV": "development", "AUTH_URL": fake.URL,
		"APP_NAME": "Acme Cloud", "BRAND_COLOR": "#d9480f", "BRAND_LOGO_URL": "/static/logo.svg", "TEMPLATES_DIR": brand,
	})
	startServe(t, env)
	base := env["PUBLIC_URL"]
	do := func(step string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		stepCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(stepCtx, steps...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}

	do("sign-in", chromedp.Navigate(base+"/session/new"), chromedp.WaitVisible(chromedp.CSS("#email")), screenshot("branded-sign-in"))
	if title := eval(`document.title`); title != "Sign in · Acme Cloud" {
		t.Errorf("title %q", title)
	}
	if button := eval(`getComputedStyle(document.querySelector("button[type=submit]")).backgroundColor`); button != "rgb(217, 72, 15)" {
		t.Errorf("the submit button is %s, not the brand colour", button)
	}
	if width := eval(`String(document.querySelector("img.logo").naturalWidth)`); width != "160" {
		t.Errorf("the logo did not load (natural width %s)", width)
	}

	do("own template", chromedp.Navigate(base+"/otp/new"), chromedp.WaitVisible(chromedp.CSS("#email")), screenshot("branded-otp"))
	if hint := eval(`document.querySelector("p.hint").textContent`); !strings.Contains(hint, "support@acme.test") {
		t.Errorf("TEMPLATES_DIR's otp_new.html not used: %q", hint)
	}

	long := "a.very.long.name.that.goes.on.and.on.for.a.while@subsidiary-of-a-company-with-a-long-domain.example.test"
	do("sign-up with a long email", chromedp.Navigate(base+"/registration/new"), chromedp.WaitVisible(chromedp.CSS("#email")),
		chromedp.SendKeys(chromedp.CSS("#email"), long), chromedp.SendKeys(chromedp.CSS("#password"), "a-good-password"),
		chromedp.Submit(chromedp.CSS("#password")), chromedp.WaitVisible(chromedp.CSS("dl.account")), screenshot("branded-account-long-email"))
	if fits := eval(`(() => { const c = document.querySelector("main.card"); return String(c.scrollWidth <= c.clientWidth) })()`); fits != "true" {
		t.Error("the long email overflows the card")
	}
}

// TestBrowserUpgradeLandsOnCheckout clicks "Upgrade" on the account page: the form posts,
// tollgate creates the checkout at the (stubbed) provider and the browser lands on its page,
// which the page's form-action must allow.
func TestBrowserUpgradeLandsOnCheckout(t *testing.T) {
	t.Parallel() // its own server and browser; browser lets two run at once
	ctx := browser(t)
	fake := identitytest.New(t)
	fake.Autoconfirm = true
	var checkouts atomic.Int32
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/checkout/sessions":
			r.ParseForm()
			if r.PostForm.Get("line_items[0][price]") != "price_1TESTmonthlyPro000001" || r.PostForm.Get("customer_email") != "upgrade@example.test" {
				http.Error(w, `{"error":{"type":"invalid_request_error","message":"unexpected"}}`, http.StatusBadRequest)
				return
			}
			checkouts.Add(1)
			fmt.Fprintf(w, `{"id":"cs_test_1","url":"http://%s/c/pay/cs_test_1"}`, r.Host)
		case "/c/pay/cs_test_1":
			fmt.Fprint(w, `<!doctype html><title>Checkout</title><h1 id="stub-checkout">Pay for Pro</h1>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer provider.Close()
	env := testEnv(t, map[string]string{
		"APP_ENV": "development", "AUTH_URL": fake.URL, "WEB_API_KEY": "sk_test_browser", "WEB_API_BASE": provider.URL,
	})
	startServe(t, env)
	base := env["PUBLIC_URL"]
	do := func(step string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		stepCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(stepCtx, steps...); err != nil {
			u, _ := chromedp.Run(ctx, chromedp.Location())
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.documentElement.outerHTML"))
			t.Fatalf("%s: %v (at %s, %d checkout(s))\n%.2000s", step, err, u, checkouts.Load(), body)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	do("sign-up", chromedp.Navigate(base+"/registration/new"), chromedp.WaitVisible(chromedp.CSS("#email")),
		chromedp.SendKeys(chromedp.CSS("#email"), "upgrade@example.test"), chromedp.SendKeys(chromedp.CSS("#password"), "a-good-password"),
		chromedp.Submit(chromedp.CSS("#password")), chromedp.WaitVisible(chromedp.CSS("form.upgrade button")), screenshot("account-upgrade"))
	do("upgrade", chromedp.Click(chromedp.CSS("form.upgrade button")), chromedp.WaitVisible(chromedp.CSS("#stub-checkout")))
	if u, _ := chromedp.Run(ctx, chromedp.Location()); u != provider.URL+"/c/pay/cs_test_1" || checkouts.Load() != 1 {
		t.Fatalf("landed on %s after %d checkout(s)", u, checkouts.Load())
	}
}
