package app

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/golang-jwt/jwt/v5"
)

// screenshotAtWidths takes the page at a desktop and a phone width, for people to look at.
func screenshotAtWidths(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.EmulateViewport(1280, 800), screenshot(name+"-1280"),
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), screenshot(name+"-390"),
		chromedp.EmulateViewport(1280, 800),
	)
}

// TestBrowserFirstRunWithoutAccounts walks the README's first run on a fresh clone's
// defaults, the binary run from the repository root with no AUTH_URL: sign up, sign in,
// the account page; "tollgate dev token" for the same address gives its user a token that
// /api/v1/me accepts; a test webhook for that user makes them Pro on the page and the API.
func TestBrowserFirstRunWithoutAccounts(t *testing.T) {
	t.Parallel() // its own server and browser; browser lets two run at once
	ctx := browser(t)
	bin := buildBinary(t)
	addr := holdAddr(t)
	vars := map[string]string{"PORT": addr[strings.LastIndex(addr, ":")+1:], "DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "first.db")}
	commandVars := maps.Clone(vars)
	tollgate := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = "../.."
		for k, v := range commandVars {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tollgate %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	vars["ADDR"] = addr                        // for startProcessIn to find the held listener
	p := startProcessIn(t, "../..", bin, vars) // the repository root, as a fresh clone runs it
	waitFor(t, func() bool { return healthcheckExit(t, bin, addr) == 0 })
	base := "http://localhost:" + vars["PORT"]
	// The line is written before the server answers; the copy of the process's output may
	// lag behind a moment.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(p.stderr.String(), "development identity service on "+base+"/_dev/auth"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no start-up line for the development identity service:\n%s", p.stderr.String())
		}
	}

	tab := newTab(t, ctx, base)
	textOf, run := tab.text, tab.run
	const email = "first-run@example.test"
	run("sign up", chromedp.Navigate(base+"/registration/new"), chromedp.WaitVisible(chromedp.CSS("#email")),
		screenshotAtWidths("first-run-sign-up"),
		chromedp.SendKeys(chromedp.CSS("#email"), email), chromedp.SendKeys(chromedp.CSS("#password"), "a-good-password"),
		chromedp.Submit(chromedp.CSS("#password")), chromedp.WaitVisible(chromedp.CSS("dl.account")))
	if banner := textOf(".dev-banner"); !strings.Contains(banner, "AUTH_URL") {
		t.Fatalf("banner %q", banner)
	}
	if !strings.Contains(textOf("dl.account"), email) || !strings.Contains(textOf("dl.account"), "Free") {
		t.Fatalf("account page after sign-up: %q", textOf("dl.account"))
	}
	run("sign out, sign in", chromedp.Click(chromedp.CSS("form button.secondary")), chromedp.WaitVisible(chromedp.CSS("#email")),
		chromedp.SendKeys(chromedp.CSS("#email"), email), chromedp.SendKeys(chromedp.CSS("#password"), "a-good-password"),
		chromedp.Submit(chromedp.CSS("#password")), chromedp.WaitVisible(chromedp.CSS("dl.account")), screenshotAtWidths("first-run-account"))

	out := tollgate("dev", "token", "--email", email)
	userID := regexp.MustCompile(`(?m)^user_id: (\S+)$`).FindStringSubmatch(out)
	token := regexp.MustCompile(`(?m)^access_token: (\S+)$`).FindStringSubmatch(out)
	if userID == nil || token == nil {
		t.Fatalf("dev token printed %q", out)
	}
	me := func() (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/me", nil)
		req.Header.Set("Authorization", "Bearer "+token[1])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	status, body := me()
	if user, _ := body["user"].(map[string]any); status != http.StatusOK || user["id"] != userID[1] || user["email"] != email {
		t.Fatalf("/api/v1/me with the dev token: %d %v, want the signed-up user %s", status, body, userID[1])
	}

	sent := tollgate("webhook", "send", "--provider", "web", "--now", "--user", userID[1],
		"--file", "internal/billing/testdata/web/customer.subscription.updated.json")
	if !strings.Contains(sent, "user "+userID[1]+": plan pro, active until") {
		t.Fatalf("webhook send: %s", sent)
	}
	waitFor(t, func() bool {
		_, body := me()
		plan, _ := body["billing"].(map[string]any)["plan"].(map[string]any)
		return plan["key"] == "pro"
	})
	run("account page, Pro", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("dl.account")), screenshotAtWidths("first-run-pro"))
	if !strings.Contains(textOf("dl.account"), "Pro") {
		t.Fatalf("account page after the webhook: %q", textOf("dl.account"))
	}
	// The development identity's access tokens carry the plan, as the hook adds it.
	again := regexp.MustCompile(`(?m)^access_token: (\S+)$`).FindStringSubmatch(tollgate("dev", "token", "--email", email))
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(again[1], claims); err != nil {
		t.Fatal(err)
	}
	if held, _ := claims["tollgate"].(map[string]any); held == nil || held["plan"].(map[string]any)["key"] != "pro" || held["valid_until"] == nil {
		t.Fatalf("dev token's claims %v: want tollgate with plan pro and valid_until", claims)
	}
}

// TestNoDevelopmentIdentityServiceOutsideDevelopment: production without AUTH_URL refuses
// to start, naming it; with the forms and the API off nothing is served under /_dev/auth;
// in test without AUTH_URL nothing is either, and the forms and the API name AUTH_URL
// rather than suggest an outage.
func TestNoDevelopmentIdentityServiceOutsideDevelopment(t *testing.T) {
	code, _, errOut := runCmd(context.Background(), testEnv(t, map[string]string{"APP_ENV": "production", "PUBLIC_URL": "https://app.example.test"}), "serve")
	if code == 0 || !strings.Contains(errOut, "AUTH_URL: is required in production") {
		t.Fatalf("production without AUTH_URL: exit %d %q", code, errOut)
	}
	jwks := func(env map[string]string) int {
		resp, err := http.Get(env["PUBLIC_URL"] + "/_dev/auth/.well-known/jwks.json")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	off := testEnv(t, map[string]string{"APP_ENV": "development", "FORMS": "off", "API": "off"})
	startServe(t, off)
	if status := jwks(off); status != http.StatusNotFound {
		t.Fatalf("FORMS=off API=off: /_dev/auth answered %d", status)
	}

	test := testEnv(t, nil) // APP_ENV=test, no AUTH_URL
	stop := startServe(t, test)
	if status := jwks(test); status != http.StatusNotFound {
		t.Fatalf("APP_ENV=test: /_dev/auth answered %d", status)
	}
	form := url.Values{"email": {"someone@example.test"}, "password": {"a-good-password"}}
	req, _ := http.NewRequest(http.MethodPost, test["PUBLIC_URL"]+"/session", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	page := bodyOf(t, req)
	if !strings.Contains(page, "AUTH_URL") || strings.Contains(page, "temporarily unavailable") {
		t.Fatalf("sign-in without AUTH_URL says:\n%s", page)
	}
	req, _ = http.NewRequest(http.MethodGet, test["PUBLIC_URL"]+"/api/v1/me", nil)
	req.Header.Set("Authorization", "Bearer eyJhbGciOiJFUzI1NiIsImtpZCI6ImsifQ.eyJzdWIiOiJ4In0.c2ln")
	if problem := bodyOf(t, req); !strings.Contains(problem, "AUTH_URL") || strings.Contains(problem, "retry") {
		t.Fatalf("/api/v1/me without AUTH_URL says %s", problem)
	}
	if code, _, errOut := runCmd(context.Background(), test, "dev", "token", "--email", "someone@example.test"); code != 1 || !strings.Contains(errOut, "AUTH_URL unset") {
		t.Errorf("dev token in test: exit %d %q", code, errOut)
	}
	if _, logs := stop(); strings.Contains(logs, "development identity service") {
		t.Fatalf("the development identity service ran in test:\n%s", logs)
	}
}

// bodyOf is the body of the answer to req, whatever its status.
func bodyOf(t *testing.T, req *http.Request) string {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestDevelopmentIdentityServiceRefusesASocketOffLoopback: a listening socket passed in
// (LISTEN_FDS) bypasses ADDR, so it is checked itself: on every interface, serve refuses
// to run the development identity service, naming AUTH_URL.
func TestDevelopmentIdentityServiceRefusesASocketOffLoopback(t *testing.T) {
	bin := buildBinary(t)
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.(*net.TCPListener).File()
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(bin, "serve")
	cmd.Env = []string{"APP_ENV=development", "LISTEN_FDS=1", "DATABASE_URL=sqlite:" + filepath.Join(t.TempDir(), "x.db"),
		"WEB_WEBHOOK_SECRET=w", "MOBILE_WEBHOOK_SECRET=m", "PLANS_FILE=../../config/plans.yml"}
	cmd.ExtraFiles = []*os.File{f}
	out, err := cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 || !strings.Contains(string(out), "AUTH_URL: is required when the socket passed in") {
		t.Fatalf("serve on a socket on every interface without AUTH_URL: %v\n%s", err, out)
	}
}
