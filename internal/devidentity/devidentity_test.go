package devidentity

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/identity"
	"github.com/tollgate/tollgate/internal/logcapture"
)

const base = "http://localhost:8080/_dev/auth"

// harness is a service over d, reached through tollgate's own identity client, with its
// log kept for the e-mails it "sent".
type harness struct {
	*Service
	client *identity.Client
	logs   *logcapture.Buffer
}

func newHarness(t *testing.T, d *db.DB) harness {
	t.Helper()
	logs := &logcapture.Buffer{}
	s, err := New(context.Background(), d, base, slog.New(slog.NewJSONHandler(logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return harness{Service: s, client: identity.New(base, "", s.Client()), logs: logs}
}

// lastEmail is the link and code of the last e-mail logged to address.
func (h harness) lastEmail(t *testing.T, to string) (link, code string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(h.logs.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["to"] == to {
			link, code = line["link"].(string), line["code"].(string)
		}
	}
	if link == "" || len(code) != 6 {
		t.Fatalf("no e-mail to %s in the log: %s", to, h.logs.String())
	}
	return link, code
}

// follow opens link without following its redirect, and returns where it sends the browser.
func (h harness) follow(t *testing.T, link string) *url.URL {
	t.Helper()
	client := h.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	to, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || err != nil {
		t.Fatalf("link answered %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return to
}

func code(err error) string {
	if e, ok := identity.AsError(err); ok {
		return e.Code
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// TestPasswordJourney: sign-up is confirmed at once and signs in; the password, the
// refresh token and /user work as tollgate's client expects; refusals carry GoTrue's codes.
func TestPasswordJourney(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := newHarness(t, d)
		ctx := context.Background()
		up, err := h.client.SignUp(ctx, "New@Example.test", "a-good-password", nil, "", identity.PKCE{})
		if err != nil || up.Session == nil || up.User.Email != "new@example.test" {
			t.Fatalf("sign-up: %+v %v, want a session at once", up, err)
		}
		if _, err := h.client.SignUp(ctx, "new@example.test", "another-password", nil, "", identity.PKCE{}); code(err) != "user_already_exists" {
			t.Fatalf("second sign-up: %v", err)
		}
		if _, err := h.client.SignUp(ctx, "short@example.test", "12345", nil, "", identity.PKCE{}); code(err) != "weak_password" {
			t.Fatalf("short password: %v", err)
		}
		if _, err := h.client.SignInWithPassword(ctx, "new@example.test", "wrong-password"); code(err) != "invalid_credentials" {
			t.Fatalf("wrong password: %v", err)
		}
		s, err := h.client.SignInWithPassword(ctx, "new@example.test", "a-good-password")
		if err != nil || s.User.ID != up.User.ID {
			t.Fatalf("sign-in: %+v %v", s, err)
		}
		refreshed, err := h.client.Refresh(ctx, s.RefreshToken)
		if err != nil || refreshed.User.ID != up.User.ID {
			t.Fatalf("refresh: %v", err)
		}
		if _, err := h.client.Refresh(ctx, s.AccessToken); code(err) != "refresh_token_not_found" {
			t.Fatalf("an access token as a refresh token: %v", err)
		}
		u, err := h.client.GetUser(ctx, refreshed.AccessToken)
		if err != nil || u.ID != up.User.ID {
			t.Fatalf("/user: %+v %v", u, err)
		}
		if _, err := h.client.GetUser(ctx, s.RefreshToken); code(err) != "bad_jwt" {
			t.Fatalf("/user with a refresh token: %v", err)
		}
		if _, err := h.client.UpdatePassword(ctx, s.AccessToken, "a-good-password"); code(err) != "same_password" {
			t.Fatalf("same password: %v", err)
		}
		if _, err := h.client.UpdatePassword(ctx, s.AccessToken, "a-new-password"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.client.SignInWithPassword(ctx, "new@example.test", "a-new-password"); err != nil {
			t.Fatalf("sign-in with the new password: %v", err)
		}
		if strings.Contains(h.logs.String(), "a-good-password") {
			t.Fatal("a password reached the log")
		}
	})
}

// TestEmailedLinksAndCodes: a reset's link goes back to redirect_to with a PKCE code that
// only the verifier exchanges; a one-time code signs in once; links leave nowhere but
// tollgate's own origin.
func TestEmailedLinksAndCodes(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := newHarness(t, d)
		ctx := context.Background()
		user, err := h.Mint(ctx, "reader@example.test")
		if err != nil {
			t.Fatal(err)
		}
		pkce := identity.NewPKCE()
		if err := h.client.Recover(ctx, "reader@example.test", "http://localhost:8080/oauth/callback", pkce); err != nil {
			t.Fatal(err)
		}
		if err := h.client.Recover(ctx, "nobody@example.test", "", pkce); err != nil {
			t.Fatalf("an unknown address is answered as a known one: %v", err)
		}
		link, _ := h.lastEmail(t, "reader@example.test")
		to := h.follow(t, link)
		if to.Path != "/oauth/callback" || to.Query().Get("code") == "" {
			t.Fatalf("the reset link redirects to %s", to)
		}
		if _, err := h.client.ExchangeCode(ctx, to.Query().Get("code"), "not-the-verifier"); code(err) != "bad_code_verifier" {
			t.Fatalf("a wrong verifier: %v", err)
		}
		s, err := h.client.ExchangeCode(ctx, to.Query().Get("code"), pkce.Verifier)
		if err != nil || s.User.ID != user.UserID {
			t.Fatalf("exchange: %+v %v", s, err)
		}
		tampered := strings.Replace(link, "redirect_to=http%3A%2F%2Flocalhost%3A8080", "redirect_to=https%3A%2F%2Fevil.example", 1)
		if to := h.follow(t, tampered); to.Host != "localhost:8080" {
			t.Fatalf("a link redirected off tollgate's origin: %s", to)
		}

		if err := h.client.SendOTP(ctx, "stranger@example.test", "", false, "", identity.PKCE{}); code(err) != "otp_disabled" {
			t.Fatalf("a code for an unknown address without create_user: %v", err)
		}
		if err := h.client.SendOTP(ctx, "reader@example.test", "", false, "", identity.NewPKCE()); err != nil {
			t.Fatal(err)
		}
		_, otp := h.lastEmail(t, "reader@example.test")
		if _, err := h.client.VerifyOTP(ctx, "email", "reader@example.test", "", "000000x"); code(err) != "otp_expired" {
			t.Fatalf("a wrong code: %v", err)
		}
		if s, err := h.client.VerifyOTP(ctx, "email", "reader@example.test", "", otp); err != nil || s.User.ID != user.UserID {
			t.Fatalf("the code: %v", err)
		}
		if _, err := h.client.VerifyOTP(ctx, "email", "reader@example.test", "", otp); code(err) != "otp_expired" {
			t.Fatalf("a code used twice: %v", err)
		}
	})
}

// TestUsersAndKeySurviveARestart: a second service over the same database (a restart, or
// "tollgate dev token" in another process) signs with the same key and knows the users.
func TestUsersAndKeySurviveARestart(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		first := newHarness(t, d)
		minted, err := first.Mint(context.Background(), "kept@example.test")
		if err != nil {
			t.Fatal(err)
		}
		second := newHarness(t, d)
		if second.kid != first.kid {
			t.Fatalf("the restarted service signs with %s, not %s", second.kid, first.kid)
		}
		u, err := second.client.GetUser(context.Background(), minted.AccessToken)
		if err != nil || u.ID != minted.UserID {
			t.Fatalf("a token from before the restart: %+v %v", u, err)
		}
		again, err := second.Mint(context.Background(), "KEPT@example.test")
		if err != nil || again.UserID != minted.UserID {
			t.Fatalf("minting for the same address again: %+v %v, want user %s", again, err, minted.UserID)
		}
		if _, err := second.Mint(context.Background(), "not an address"); err == nil || errors.Is(err, ErrNoUser) {
			t.Fatalf("minting for a malformed address: %v", err)
		}
	})
}
