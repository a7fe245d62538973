// Package identitytest is an in-process fake of the identity service (the GoTrue API) for
// tests: the same paths, request and response shapes and error codes (both error formats),
// real ES256 access tokens with a JWKS, refresh rotation with reuse detection, e-mails that
// follow Supabase Auth's default templates (a link, no code) readable by tests, PKCE flow
// state with its expiry, rate-limit errors on demand, and switches that make it fail with
// 5xx, time out or answer garbage.
//
// Where it imitates a behaviour of Supabase Auth (github.com/supabase/auth), the comment
// names the upstream file it comes from.
package identitytest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Failure modes.
const (
	Healthy = iota
	Down    // every call answers 500
	Slow    // every call hangs for Delay
	Garbage // every call answers 200 with HTML
)

// Fake is the fake identity service. URL is its base (like https://<ref>.supabase.co/auth/v1).
type Fake struct {
	URL    string
	Server *httptest.Server
	// Autoconfirm: sign-ups get a session at once (no confirmation e-mail).
	Autoconfirm bool
	// CodesInEmails: the e-mail templates include {{ .Token }}. Supabase Auth's default
	// templates carry only {{ .ConfirmationURL }} (mailer/templatemailer/templatemailer.go),
	// so by default an e-mail has a link and no code.
	CodesInEmails bool
	// DenyOAuth: the user turns the OAuth provider's consent down, which Supabase Auth
	// passes on as error=access_denied without an error_code (api/external.go).
	DenyOAuth bool
	// SiteURL is where links go when a call names no redirect_to (utilities/request.go).
	SiteURL string
	// FlowStateExpiry is the PKCE flow state's lifetime (conf: 300 s at least).
	FlowStateExpiry time.Duration
	// TokenTTL is the access tokens' lifetime.
	TokenTTL time.Duration
	Delay    time.Duration

	key *ecdsa.PrivateKey
	kid string

	mu          sync.Mutex
	mode        int
	nextError   map[string]fakeError // path → one error to answer next
	users       map[string]*user     // by email or phone
	sessions    map[string]*session  // by session id
	refresh     map[string]*refresh  // by refresh token
	smsCodes    map[string]string    // phone → code
	emails      map[string]Email     // address → the last e-mail sent to it
	flows       []*flow
	calls       map[string]int
	lastRequest map[string]map[string]any
}

type user struct {
	ID, Email, Phone, Password string
	Metadata                   map[string]any
	Provider                   string
	Confirmed                  bool
	CreatedAt                  time.Time
	// One pending secret of each kind, as the users table's confirmation_token and
	// recovery_token (the newest e-mail wins).
	confirmation, recovery *emailToken
}

// emailToken is an e-mailed secret: the 6-digit code and the hash its link carries,
// sha224(email+code), prefixed pkce_ in a PKCE flow (crypto.GenerateTokenHash,
// api/pkce.go addFlowPrefixToToken).
type emailToken struct {
	code, hash string
	sentAt     time.Time
}

// emailTokenLifetime is GOTRUE_MAILER_OTP_EXP's default (conf/configuration.go).
const emailTokenLifetime = 24 * time.Hour

// Email is a message the fake sent: its kind (signup, recovery, magiclink), the link
// ({{ .ConfirmationURL }}) and, only when CodesInEmails, the code ({{ .Token }}).
type Email struct {
	To, Type, Link, Code string
}

type session struct {
	id      string
	user    *user
	revoked bool
}

type refresh struct {
	session *session
	used    bool
}

// flow is a PKCE flow state (models/flow_state.go): created when a call brings a
// code_challenge, given an auth code when its link is verified or the provider answers.
type flow struct {
	challenge, method string
	user              *user
	authCode          string
	created, issued   time.Time
}

// expired follows FlowState.IsExpired: a magic link's flow lives from its code's issue,
// every other from its creation.
func (fl *flow) expired(lifetime time.Duration) bool {
	start := fl.created
	if fl.method == "magiclink" && !fl.issued.IsZero() {
		start = fl.issued
	}
	return time.Now().After(start.Add(lifetime))
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
		TokenTTL: time.Hour, Delay: 5 * time.Second, key: key, kid: "fake-key-1",
		SiteURL: "http://localhost:3000", FlowStateExpiry: 300 * time.Second,
		nextError: map[string]fakeError{}, users: map[string]*user{}, sessions: map[string]*session{},
		refresh: map[string]*refresh{}, smsCodes: map[string]string{}, emails: map[string]Email{},
		calls: map[string]int{}, lastRequest: map[string]map[string]any{},
	}
	f.Server = httptest.NewServer(f.handler())
	f.URL = f.Server.URL + "/auth/v1"
	return f, nil
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
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addUser(email, "", password, true).ID
}

func (f *Fake) addUser(email, phone, password string, confirmed bool) *user {
	u := &user{ID: newUUID(), Email: email, Phone: phone, Password: password, Metadata: map[string]any{}, Provider: "email",
		Confirmed: confirmed, CreatedAt: time.Now().UTC()}
	if email != "" {
		f.users[email] = u
	}
	if phone != "" {
		f.users[phone] = u
	}
	return u
}

// Token signs email in, creating a confirmed user if there is none, and returns the user's
// id and an access token, as a client holding a session would send it.
func (f *Fake) Token(email string) (userID, accessToken string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u := f.users[email]
	if u == nil {
		u = f.addUser(email, "", randomHex(16), true)
	}
	return u.ID, f.newSession(u)["access_token"].(string)
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

func (f *Fake) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /auth/v1/.well-known/jwks.json", f.jwks)
	mux.HandleFunc("POST /auth/v1/token", f.token)
	mux.HandleFunc("POST /auth/v1/signup", f.signup)
	mux.HandleFunc("POST /auth/v1/recover", f.recover)
	mux.HandleFunc("POST /auth/v1/otp", f.otp)
	mux.HandleFunc("POST /auth/v1/verify", f.verify)
	mux.HandleFunc("GET /auth/v1/verify", f.verifyLink)
	mux.HandleFunc("GET /auth/v1/user", f.getUser)
	mux.HandleFunc("PUT /auth/v1/user", f.putUser)
	mux.HandleFunc("POST /auth/v1/logout", f.logout)
	mux.HandleFunc("GET /auth/v1/authorize", f.authorize)
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
		if r.Body != nil && r.Header.Get("Content-Type") != "" {
			var body map[string]any
			if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&body) != nil {
				f.fail(w, r, http.StatusBadRequest, "bad_json", "Could not parse request body as JSON")
				return
			}
			f.mu.Lock()
			f.lastRequest[path] = body
			f.mu.Unlock()
			b, _ := json.Marshal(body)
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		switch mode {
		case Down:
			http.Error(w, `{"message":"An internal error occurred"}`, http.StatusInternalServerError)
			return
		case Slow:
			select {
			case <-time.After(f.Delay):
			case <-r.Context().Done():
			}
			return
		case Garbage:
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>Bad gateway</body></html>")
			return
		}
		if failing {
			f.fail(w, r, next.status, next.code, next.msg)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// fail answers in GoTrue's error format: the newer one with X-Supabase-Api-Version.
func (f *Fake) fail(w http.ResponseWriter, r *http.Request, status int, code, msg string, extra ...map[string]any) {
	body := map[string]any{"code": status, "error_code": code, "msg": msg}
	if r.Header.Get("X-Supabase-Api-Version") == "2024-01-01" {
		body = map[string]any{"code": code, "message": msg}
	}
	for _, e := range extra {
		for k, v := range e {
			body[k] = v
		}
	}
	w.Header().Set("X-Sb-Error-Code", code)
	writeJSON(w, status, body)
}

func (f *Fake) jwks(w http.ResponseWriter, r *http.Request) {
	x, y := make([]byte, 32), make([]byte, 32)
	f.key.PublicKey.X.FillBytes(x)
	f.key.PublicKey.Y.FillBytes(y)
	w.Header().Set("Cache-Control", "public, max-age=600")
	writeJSON(w, 200, map[string]any{"keys": []map[string]any{{
		"kty": "EC", "crv": "P-256", "kid": f.kid, "alg": "ES256", "use": "sig", "key_ops": []string{"verify"},
		"x": base64.RawURLEncoding.EncodeToString(x), "y": base64.RawURLEncoding.EncodeToString(y),
	}}})
}

func body(r *http.Request) map[string]any {
	var m map[string]any
	json.NewDecoder(r.Body).Decode(&m)
	if m == nil {
		m = map[string]any{}
	}
	return m
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// recipient is who a code goes to: the phone when one is given, else the e-mail.
func recipient(b map[string]any) string {
	if p := str(b, "phone"); p != "" {
		return p
	}
	return str(b, "email")
}

func (f *Fake) token(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Query().Get("grant_type") {
	case "password":
		u := f.users[str(b, "email")]
		if u == nil || u.Password != str(b, "password") {
			f.fail(w, r, 400, "invalid_credentials", "Invalid login credentials")
			return
		}
		if !u.Confirmed {
			f.fail(w, r, 400, "email_not_confirmed", "Email not confirmed")
			return
		}
		writeJSON(w, 200, f.newSession(u))
	case "refresh_token":
		rt := f.refresh[str(b, "refresh_token")]
		switch {
		case rt == nil:
			f.fail(w, r, 400, "refresh_token_not_found", "Invalid Refresh Token: Refresh Token Not Found")
		case rt.used || rt.session.revoked:
			rt.session.revoked = true // reuse detection revokes the whole family
			f.fail(w, r, 400, "refresh_token_already_used", "Invalid Refresh Token: Already Used")
		default:
			rt.used = true
			writeJSON(w, 200, f.sessionResponse(rt.session))
		}
	case "pkce": // api/token.go PKCE: a wrong verifier leaves the flow usable
		i := f.flowIndex(func(fl *flow) bool { return fl.authCode != "" && fl.authCode == str(b, "auth_code") })
		switch {
		case i < 0:
			f.fail(w, r, 404, "flow_state_not_found", "invalid flow state, no valid flow state found")
		case f.flows[i].expired(f.FlowStateExpiry):
			f.fail(w, r, 422, "flow_state_expired", "invalid flow state, flow state has expired")
		case s256(str(b, "code_verifier")) != f.flows[i].challenge:
			f.fail(w, r, 400, "bad_code_verifier", "code challenge does not match previously saved code verifier")
		default:
			u := f.flows[i].user
			f.flows = append(f.flows[:i], f.flows[i+1:]...)
			writeJSON(w, 200, f.newSession(u))
		}
	default:
		f.fail(w, r, 400, "unsupported_grant_type", "unsupported_grant_type")
	}
}

// signup follows api/signup.go: with confirmations on, a new or unconfirmed address gets
// the confirmation e-mail and an existing confirmed one an answer that looks the same.
func (f *Fake) signup(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	email, password := str(b, "email"), str(b, "password")
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(password) < 6 {
		f.fail(w, r, 422, "weak_password", "Password should be at least 6 characters.", map[string]any{"weak_password": map[string]any{"reasons": []string{"length"}}})
		return
	}
	u := f.users[email]
	if u != nil && (u.Confirmed || f.Autoconfirm) {
		if f.Autoconfirm {
			f.fail(w, r, 422, "user_already_exists", "User already registered")
			return
		}
		writeJSON(w, 200, f.userJSON(&user{ID: newUUID(), Email: email, Metadata: map[string]any{}, CreatedAt: time.Now()}))
		return
	}
	if u == nil {
		u = f.addUser(email, "", password, f.Autoconfirm)
	}
	if data, ok := b["data"].(map[string]any); ok {
		u.Metadata = data
	}
	if f.Autoconfirm {
		writeJSON(w, 200, f.newSession(u))
		return
	}
	f.sendEmail(r, u, "signup", str(b, "code_challenge"))
	writeJSON(w, 200, f.userJSON(u))
}

// recover follows api/recover.go: the same empty answer whether or not the address exists.
func (f *Fake) recover(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	if u := f.users[str(b, "email")]; u != nil {
		f.sendEmail(r, u, "recovery", str(b, "code_challenge"))
	}
	writeJSON(w, 200, map[string]any{})
}

// otp follows api/otp.go and api/magic_link.go: SMS gets a code; e-mail gets a magic link,
// or the confirmation e-mail when the address is new or unconfirmed.
func (f *Fake) otp(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	phone, email := str(b, "phone"), str(b, "email")
	f.mu.Lock()
	defer f.mu.Unlock()
	to := recipient(b)
	u := f.users[to]
	if u == nil {
		if create, _ := b["create_user"].(bool); !create {
			f.fail(w, r, 422, "otp_disabled", "Signups not allowed for otp")
			return
		}
		u = f.addUser(email, phone, randomHex(16), phone != "")
	}
	switch {
	case phone != "":
		f.smsCodes[phone] = fmt.Sprintf("%06d", randomInt(1_000_000))
	case !u.Confirmed:
		f.sendEmail(r, u, "signup", str(b, "code_challenge"))
	default:
		f.sendEmail(r, u, "magiclink", str(b, "code_challenge"))
	}
	writeJSON(w, 200, map[string]any{})
}

// sendEmail "sends" an e-mail of a kind: a new secret replaces the user's pending one of
// that kind, and a code_challenge makes it a PKCE flow (api/pkce.go generateFlowState).
// The link is mailer/templatemailer.go's ConfirmationURL; redirect_to is the call's own,
// else the site URL (utilities/request.go GetReferrer).
func (f *Fake) sendEmail(r *http.Request, u *user, kind, challenge string) {
	code := fmt.Sprintf("%06d", randomInt(1_000_000))
	tok := &emailToken{code: code, hash: tokenHash(u.Email, code), sentAt: time.Now()}
	if challenge != "" {
		tok.hash = "pkce_" + tok.hash
		f.flows = append(f.flows, &flow{challenge: challenge, method: kind, user: u, created: time.Now()})
	}
	if kind == "signup" {
		u.confirmation = tok
	} else {
		u.recovery = tok
	}
	redirectTo := r.URL.Query().Get("redirect_to")
	if redirectTo == "" {
		redirectTo = f.SiteURL
	}
	e := Email{To: u.Email, Type: kind,
		Link: f.URL + "/verify?" + url.Values{"token": {tok.hash}, "type": {kind}, "redirect_to": {redirectTo}}.Encode()}
	if f.CodesInEmails {
		e.Code = code
	}
	f.emails[u.Email] = e
}

// verify is POST /verify, a code typed in (api/verify.go verifyPost, verifyUserAndToken):
// type email tries the confirmation, then the recovery secret; a PKCE-flow secret takes
// its code too. The answer is a session, in the body.
func (f *Fake) verify(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	to, code := recipient(b), str(b, "token")
	f.mu.Lock()
	defer f.mu.Unlock()
	u := f.users[to]
	ok := false
	switch typ := str(b, "type"); {
	case u == nil:
	case typ == "sms" || typ == "phone_change":
		if ok = f.smsCodes[to] != "" && f.smsCodes[to] == code; ok {
			delete(f.smsCodes, to)
		}
	default:
		var kinds []**emailToken
		switch typ {
		case "email":
			kinds = []**emailToken{&u.confirmation, &u.recovery}
		case "signup", "invite":
			kinds = []**emailToken{&u.confirmation}
		case "recovery", "magiclink":
			kinds = []**emailToken{&u.recovery}
		}
		for _, k := range kinds {
			if t := *k; t != nil && time.Since(t.sentAt) < emailTokenLifetime && strings.TrimPrefix(t.hash, "pkce_") == tokenHash(u.Email, code) {
				*k, ok = nil, true
				break
			}
		}
	}
	if !ok {
		f.fail(w, r, 403, "otp_expired", "Token has expired or is invalid")
		return
	}
	u.Confirmed = true
	writeJSON(w, 200, f.newSession(u))
}

// verifyLink is GET /verify, the e-mailed link (api/verify.go verifyGet). A pkce_ token
// redirects to redirect_to with ?code=…; any other is the implicit flow, whose tokens go in
// the URL fragment. Failures redirect with error, error_code and error_description: in the
// query only for PKCE, always in the fragment (prepErrorRedirectURL).
func (f *Fake) verifyLink(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	token, kind, redirectTo := q.Get("token"), q.Get("type"), q.Get("redirect_to")
	pkce := strings.HasPrefix(token, "pkce_")
	f.mu.Lock()
	defer f.mu.Unlock()
	var u *user
	for _, candidate := range f.users {
		t := candidate.recovery
		if kind == "signup" || kind == "invite" {
			t = candidate.confirmation
		}
		if t != nil && t.hash == token && time.Since(t.sentAt) < emailTokenLifetime {
			u = candidate
		}
	}
	if u == nil {
		f.redirectError(w, r, redirectTo, pkce, 403, "otp_expired", "Email link is invalid or has expired")
		return
	}
	if kind == "signup" || kind == "invite" {
		u.confirmation = nil
	} else {
		u.recovery = nil
	}
	u.Confirmed = true // signupVerify and recoverVerify both confirm the address
	if !pkce {
		s := f.newSession(u)
		fragment := url.Values{"type": {kind}}
		for _, k := range []string{"access_token", "refresh_token", "token_type"} {
			fragment.Set(k, fmt.Sprint(s[k]))
		}
		http.Redirect(w, r, redirectTo+"#"+fragment.Encode(), http.StatusSeeOther)
		return
	}
	i := f.flowIndex(func(fl *flow) bool { return fl.user == u && fl.method == kind })
	if i < 0 { // api/pkce.go issueAuthCode
		f.redirectError(w, r, redirectTo, pkce, 422, "flow_state_not_found", "No valid flow state found for user.")
		return
	}
	fl := f.flows[i]
	fl.authCode, fl.issued = newUUID(), time.Now()
	http.Redirect(w, r, redirectTo+"?"+url.Values{"code": {fl.authCode}}.Encode(), http.StatusSeeOther)
}

// redirectError sends the browser back to redirectTo with an error, as verify.go's
// prepErrorRedirectURL does; error is named only for statuses in errors.go's oauthErrorMap.
func (f *Fake) redirectError(w http.ResponseWriter, r *http.Request, redirectTo string, inQuery bool, status int, code, description string) {
	params := url.Values{"error_code": {code}, "error_description": {description}}
	if name, ok := map[int]string{400: "invalid_request", 401: "unauthorized_client", 403: "access_denied", 500: "server_error", 503: "temporarily_unavailable"}[status]; ok {
		params.Set("error", name)
	}
	target := redirectTo
	if inQuery {
		target += "?" + params.Encode()
	}
	params.Set("sb", "")
	http.Redirect(w, r, target+"#"+params.Encode(), http.StatusSeeOther)
}

// flowIndex is the newest flow that matches, or -1. f.mu is held.
func (f *Fake) flowIndex(match func(*flow) bool) int {
	for i := len(f.flows) - 1; i >= 0; i-- {
		if match(f.flows[i]) {
			return i
		}
	}
	return -1
}

// authorize stands in for the whole provider round trip: it signs in (or creates) a user of
// that provider and redirects back with a PKCE code (api/external.go). A provider that is
// not enabled gets Supabase Auth's JSON error, which is what a browser would end on.
func (f *Fake) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	provider := q.Get("provider")
	if provider != "github" && provider != "google" {
		f.fail(w, r, 400, "validation_failed", "Unsupported provider: provider is not enabled")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.DenyOAuth {
		params := url.Values{"error": {"access_denied"}, "error_description": {"The user denied the request"}}
		http.Redirect(w, r, q.Get("redirect_to")+"?"+params.Encode()+"#"+params.Encode()+"&sb=", http.StatusFound)
		return
	}
	email := provider + "-user@example.test"
	u := f.users[email]
	if u == nil {
		u = f.addUser(email, "", "", true)
		u.Provider = provider
	}
	fl := &flow{challenge: q.Get("code_challenge"), method: "oauth", user: u, authCode: newUUID(), created: time.Now(), issued: time.Now()}
	f.flows = append(f.flows, fl)
	http.Redirect(w, r, q.Get("redirect_to")+"?"+url.Values{"code": {fl.authCode}}.Encode(), http.StatusFound)
}

func (f *Fake) sessionFor(r *http.Request) (*session, bool) {
	raw := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	tok, err := jwt.Parse(raw, func(*jwt.Token) (any, error) { return &f.key.PublicKey, nil }, jwt.WithValidMethods([]string{"ES256"}))
	if err != nil {
		return nil, false
	}
	claims := tok.Claims.(jwt.MapClaims)
	s := f.sessions[claims["session_id"].(string)]
	return s, s != nil && !s.revoked
}

// authorized is the bearer's live session; otherwise it answers session_not_found. f.mu is held.
func (f *Fake) authorized(w http.ResponseWriter, r *http.Request) (*session, bool) {
	s, ok := f.sessionFor(r)
	if !ok {
		f.fail(w, r, 403, "session_not_found", "Session from session_id claim in JWT does not exist")
	}
	return s, ok
}

func (f *Fake) getUser(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.authorized(w, r); ok {
		writeJSON(w, 200, f.userJSON(s.user))
	}
}

func (f *Fake) putUser(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.authorized(w, r)
	if !ok {
		return
	}
	password := str(b, "password")
	switch {
	case len(password) < 6:
		f.fail(w, r, 422, "weak_password", "Password should be at least 6 characters.", map[string]any{"weak_password": map[string]any{"reasons": []string{"length"}}})
		return
	case password == s.user.Password:
		f.fail(w, r, 422, "same_password", "New password should be different from the old password.")
		return
	}
	s.user.Password = password
	for _, other := range f.sessions { // a password change logs out every other session
		if other.user == s.user && other != s {
			other.revoked = true
		}
	}
	writeJSON(w, 200, f.userJSON(s.user))
}

func (f *Fake) logout(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.authorized(w, r); ok {
		s.revoked = true
		w.WriteHeader(http.StatusNoContent)
	}
}

func (f *Fake) newSession(u *user) map[string]any {
	s := &session{id: newUUID(), user: u}
	f.sessions[s.id] = s
	return f.sessionResponse(s)
}

// sessionResponse issues a new access token and refresh token for s.
func (f *Fake) sessionResponse(s *session) map[string]any {
	now := time.Now()
	exp := now.Add(f.TokenTTL)
	claims := jwt.MapClaims{
		"iss": f.URL, "sub": s.user.ID, "aud": "authenticated", "exp": exp.Unix(), "iat": now.Unix(),
		"email": s.user.Email, "phone": s.user.Phone, "role": "authenticated", "aal": "aal1",
		"amr": []map[string]any{{"method": "password", "timestamp": now.Unix()}}, "session_id": s.id, "is_anonymous": false,
		"app_metadata":  map[string]any{"provider": s.user.Provider, "providers": []string{s.user.Provider}},
		"user_metadata": s.user.Metadata,
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	tok.Header["kid"] = f.kid
	access, _ := tok.SignedString(f.key)
	rt := randomHex(12)
	f.refresh[rt] = &refresh{session: s}
	return map[string]any{"access_token": access, "token_type": "bearer", "expires_in": int64(f.TokenTTL / time.Second),
		"expires_at": exp.Unix(), "refresh_token": rt, "user": f.userJSON(s.user)}
}

// userJSON follows models/user.go: email_confirmed_at is there only once the address is
// confirmed (the fake dates that to the user's creation).
func (f *Fake) userJSON(u *user) map[string]any {
	body := map[string]any{"id": u.ID, "aud": "authenticated", "role": "authenticated", "email": u.Email, "phone": u.Phone,
		"app_metadata":  map[string]any{"provider": u.Provider, "providers": []string{u.Provider}},
		"user_metadata": u.Metadata, "identities": []any{}, "factors": []any{},
		"created_at": u.CreatedAt.Format(time.RFC3339Nano), "last_sign_in_at": time.Now().UTC().Format(time.RFC3339Nano)}
	if u.Confirmed && u.Email != "" {
		body["email_confirmed_at"] = u.CreatedAt.Format(time.RFC3339Nano)
	}
	return body
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func tokenHash(email, code string) string {
	sum := sha256.Sum224([]byte(email + code))
	return hex.EncodeToString(sum[:])
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func randomInt(n int) int {
	var b [4]byte
	rand.Read(b[:])
	return int(uint32(b[0])<<24|uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3])) % n
}

func newUUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
