// Package identitytest is the tests' identity service: the GoTrue emulator of
// internal/devidentity over users in memory, on a loopback port, with what tests need
// beyond it: switches that make it fail with 5xx, time out or answer garbage, one injected
// error on demand (a rate limit, say), the calls it received, and the e-mails and SMS codes
// it "sent".
package identitytest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/devidentity"
)

// Failure modes.
const (
	Healthy = iota
	Down    // every call answers 500
	Slow    // every call hangs for Delay
	Garbage // every call answers 200 with HTML
)

// Email is a message the fake sent.
type Email = devidentity.Email

// Fake is the fake identity service. URL is its base (like https://<ref>.supabase.co/auth/v1).
// Its Settings (Autoconfirm, CodesInEmails, DenyOAuth, SiteURL, FlowStateExpiry, TokenTTL
// …) may be changed between requests.
type Fake struct {
	*devidentity.Emulator
	URL    string
	Server *httptest.Server
	Delay  time.Duration

	mu          sync.Mutex
	mode        int
	nextError   map[string]fakeError // path → one error to answer next
	smsCodes    map[string]string    // phone → code
	emails      map[string]Email     // address → the last e-mail sent to it
	calls       map[string]int
	lastRequest map[string]map[string]any
}

type fakeError struct {
	status int
	code   string
	msg    string
}

// New starts a fake on a loopback port, stopped when the test ends.
func New(t testing.TB) *Fake {
	f, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Server.Close)
	return f
}

// Start starts a fake on a loopback port; Server.Close stops it.
func Start() (*Fake, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	f := &Fake{
		Delay: 5 * time.Second, nextError: map[string]fakeError{}, smsCodes: map[string]string{}, emails: map[string]Email{},
		calls: map[string]int{}, lastRequest: map[string]map[string]any{},
	}
	f.Server = httptest.NewUnstartedServer(nil)
	f.URL = "http://" + f.Server.Listener.Addr().String() + "/auth/v1"
	f.Emulator, err = devidentity.NewEmulator(devidentity.Config{
		Base: f.URL, Store: devidentity.NewMemoryStore(), Key: key, KeyID: "fake-key-1",
		Log: slog.New(slog.DiscardHandler), Mailer: f.mail, Texter: f.text,
		Settings: devidentity.Settings{
			Phone: true, OAuthProviders: []string{"github", "google"}, SiteURL: "http://localhost:3000",
			FlowStateExpiry: 300 * time.Second, TokenTTL: time.Hour,
			PasswordIterations: 1, // the tests' passwords guard nothing
		},
	})
	if err != nil {
		return nil, err
	}
	f.Server.Config.Handler = f.handler(f.Emulator.Handler())
	f.Server.Start()
	return f, nil
}

func (f *Fake) mail(_ context.Context, e Email, _ string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.emails[e.To] = e
}

func (f *Fake) text(_ context.Context, phone, code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.smsCodes[phone] = code
}

// SetMode switches failure modes (Healthy, Down, Slow, Garbage).
func (f *Fake) SetMode(mode int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode = mode
}

// FailNext makes the next call to path answer the given error (e.g. 429
// over_email_send_rate_limit).
func (f *Fake) FailNext(path string, status int, code, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextError[path] = fakeError{status, code, msg}
}

// AddUser creates a confirmed user.
func (f *Fake) AddUser(email, password string) string {
	id, err := f.Emulator.AddUser(context.Background(), email, password)
	if err != nil {
		panic("identitytest: AddUser " + email + ": " + err.Error())
	}
	return id
}

// Token signs email in, creating a confirmed user if there is none, and returns the user's
// id and an access token, as a client holding a session would send it.
func (f *Fake) Token(email string) (userID, accessToken string) {
	t, err := f.Mint(context.Background(), email)
	if err != nil {
		panic("identitytest: Token " + email + ": " + err.Error())
	}
	return t.UserID, t.AccessToken
}

// Calls is how many requests reached path (e.g. "/token", or "/token?grant_type=refresh_token").
func (f *Fake) Calls(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[path]
}

// TotalCalls is how many requests reached the fake at all.
func (f *Fake) TotalCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

// LastRequest is the JSON body of the last request to path.
func (f *Fake) LastRequest(path string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastRequest[path]
}

// OTP is the code last sent to a phone number, or shown in the last e-mail to an address
// (only when CodesInEmails).
func (f *Fake) OTP(to string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if code, ok := f.smsCodes[to]; ok {
		return code
	}
	return f.emails[to].Code
}

// LastEmail is the last e-mail sent to address.
func (f *Fake) LastEmail(address string) (Email, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.emails[address]
	return e, ok
}

// handler counts and records each call, then fails it as the mode or an injected error
// says, or passes it to the emulator.
func (f *Fake) handler(emulator http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimPrefix(r.URL.Path, "/auth/v1")
		f.mu.Lock()
		f.calls[path]++
		if path == "/token" {
			f.calls[path+"?grant_type="+r.URL.Query().Get("grant_type")]++
		}
		mode := f.mode
		next, failing := f.nextError[path]
		delete(f.nextError, path)
		f.mu.Unlock()
		if r.Body != nil && r.Header.Get("Content-Type") == "application/json" {
			raw, _ := io.ReadAll(r.Body)
			var body map[string]any
			if json.Unmarshal(raw, &body) == nil {
				f.mu.Lock()
				f.lastRequest[path] = body
				f.mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(raw))
		}
		switch {
		case mode == Down:
			http.Error(w, `{"message":"An internal error occurred"}`, http.StatusInternalServerError)
		case mode == Slow:
			select {
			case <-time.After(f.Delay):
			case <-r.Context().Done():
			}
		case mode == Garbage:
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>Bad gateway</body></html>")
		case failing:
			f.fail(w, r, next)
		default:
			emulator.ServeHTTP(w, r)
		}
	})
}

// fail answers an injected error in GoTrue's error format: the newer one with
// X-Supabase-Api-Version.
func (f *Fake) fail(w http.ResponseWriter, r *http.Request, e fakeError) {
	body := map[string]any{"code": e.status, "error_code": e.code, "msg": e.msg}
	if r.Header.Get("X-Supabase-Api-Version") == "2024-01-01" {
		body = map[string]any{"code": e.code, "message": e.msg}
	}
	w.Header().Set("X-Sb-Error-Code", e.code)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	json.NewEncoder(w).Encode(body)
}
