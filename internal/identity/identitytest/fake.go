// Package identitytest is an in-process fake of the identity service (the GoTrue API) for
// tests: the same paths, request and response shapes and error codes (both error formats),
// real ES256 access tokens with a JWKS, refresh rotation with reuse detection, OTP codes
// and recovery links readable by tests, single-use PKCE flow state, rate-limit errors on
// demand, and switches that make it fail with 5xx, time out or answer garbage.
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
	otps        map[string]string    // email or phone → code
	flows       map[string]*flow     // auth code → flow
	recoveries  map[string]string    // unused recovery link → email
	calls       map[string]int
	lastRequest map[string]map[string]any
}

type user struct {
	ID, Email, Phone, Password string
	Metadata                   map[string]any
	Provider                   string
	Confirmed                  bool
	CreatedAt                  time.Time
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

type flow struct {
	challenge string
	user      *user
	used      bool
	expires   time.Time
}

type fakeError struct {
	status int
	code   string
	msg    string
}

// New starts a fake on a loopback port, stopped when the test ends.
func New(t testing.TB) *Fake {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f := &Fake{
		TokenTTL: time.Hour, Delay: 5 * time.Second, key: key, kid: "fake-key-1",
		nextError: map[string]fakeError{}, users: map[string]*user{}, sessions: map[string]*session{},
		refresh: map[string]*refresh{}, otps: map[string]string{}, flows: map[string]*flow{},
		recoveries: map[string]string{}, calls: map[string]int{}, lastRequest: map[string]map[string]any{},
	}
	f.Server = httptest.NewServer(f.handler())
	f.URL = f.Server.URL + "/auth/v1"
	t.Cleanup(f.Server.Close)
	return f
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

// OTP is the code last sent to an e-mail address or phone number.
func (f *Fake) OTP(to string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.otps[to]
}

// RecoveryLink is the link of a reset e-mail sent to email and not used yet, or "".
func (f *Fake) RecoveryLink(email string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for link, e := range f.recoveries {
		if e == email {
			return link
		}
	}
	return ""
}

// JWKSURL is the fake's key set.
func (f *Fake) JWKSURL() string { return f.URL + "/.well-known/jwks.json" }

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
	case "pkce":
		fl := f.flows[str(b, "auth_code")]
		switch {
		case fl == nil || fl.used:
			f.fail(w, r, 404, "flow_state_not_found", "invalid flow state, no valid flow state found")
		case time.Now().After(fl.expires):
			f.fail(w, r, 422, "flow_state_expired", "invalid flow state, flow state has expired")
		case s256(str(b, "code_verifier")) != fl.challenge:
			fl.used = true
			f.fail(w, r, 400, "bad_code_verifier", "code challenge does not match previously saved code verifier")
		default:
			fl.used = true
			writeJSON(w, 200, f.newSession(fl.user))
		}
	default:
		f.fail(w, r, 400, "unsupported_grant_type", "unsupported_grant_type")
	}
}

func (f *Fake) signup(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	email, password := str(b, "email"), str(b, "password")
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(password) < 6 {
		f.fail(w, r, 422, "weak_password", "Password should be at least 6 characters.", map[string]any{"weak_password": map[string]any{"reasons": []string{"length"}}})
		return
	}
	if existing := f.users[email]; existing != nil {
		if f.Autoconfirm {
			f.fail(w, r, 422, "user_already_exists", "User already registered")
			return
		}
		// With confirmations on, GoTrue answers an existing address like a new one.
		writeJSON(w, 200, f.userJSON(&user{ID: newUUID(), Email: email, Metadata: map[string]any{}, CreatedAt: time.Now()}))
		return
	}
	u := f.addUser(email, "", password, f.Autoconfirm)
	if data, ok := b["data"].(map[string]any); ok {
		u.Metadata = data
	}
	if f.Autoconfirm {
		writeJSON(w, 200, f.newSession(u))
		return
	}
	writeJSON(w, 200, f.userJSON(u))
}

func (f *Fake) recover(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	if u := f.users[str(b, "email")]; u != nil {
		for link, email := range f.recoveries { // a user has one recovery token: the newest
			if email == u.Email {
				delete(f.recoveries, link)
			}
		}
		// The link the e-mail would hold: /verify, which redirects back with a PKCE code.
		q := url.Values{"token": {randomHex(16)}, "type": {"recovery"}, "redirect_to": {r.URL.Query().Get("redirect_to")},
			"code_challenge": {str(b, "code_challenge")}}
		f.recoveries[f.URL+"/verify?"+q.Encode()] = u.Email
	}
	writeJSON(w, 200, map[string]any{})
}

func (f *Fake) otp(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	to := recipient(b)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.users[to] == nil {
		if create, _ := b["create_user"].(bool); !create {
			f.fail(w, r, 422, "otp_disabled", "Signups not allowed for otp")
			return
		}
		if str(b, "phone") != "" {
			f.addUser("", to, "", true)
		} else {
			f.addUser(to, "", "", true)
		}
	}
	f.otps[to] = fmt.Sprintf("%06d", randomInt(1_000_000))
	writeJSON(w, 200, map[string]any{})
}

func (f *Fake) verify(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	to := recipient(b)
	f.mu.Lock()
	defer f.mu.Unlock()
	code, ok := f.otps[to]
	if !ok || code != str(b, "token") {
		f.fail(w, r, 403, "otp_expired", "Token has expired or is invalid")
		return
	}
	delete(f.otps, to)
	writeJSON(w, 200, f.newSession(f.users[to]))
}

// verifyLink is the e-mailed link: it redirects to redirect_to with a PKCE code.
func (f *Fake) verifyLink(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	link := f.URL + "/verify?" + r.URL.RawQuery
	email, ok := f.recoveries[link]
	redirect := r.URL.Query().Get("redirect_to")
	if !ok {
		http.Redirect(w, r, redirect+"?error=access_denied&error_code=otp_expired&error_description=Email+link+is+invalid+or+has+expired", http.StatusSeeOther)
		return
	}
	delete(f.recoveries, link)
	code := newUUID()
	f.flows[code] = &flow{challenge: r.URL.Query().Get("code_challenge"), user: f.users[email], expires: time.Now().Add(5 * time.Minute)}
	http.Redirect(w, r, redirect+"?code="+code, http.StatusSeeOther)
}

// authorize stands in for the whole provider round trip: it signs in (or creates) a user of
// that provider and redirects back with a PKCE code.
func (f *Fake) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	provider := q.Get("provider")
	if provider != "github" && provider != "google" {
		f.fail(w, r, 400, "validation_failed", "Unsupported provider: Provider "+provider+" could not be found")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	email := provider + "-user@example.test"
	u := f.users[email]
	if u == nil {
		u = f.addUser(email, "", "", true)
		u.Provider = provider
	}
	code := newUUID()
	f.flows[code] = &flow{challenge: q.Get("code_challenge"), user: u, expires: time.Now().Add(5 * time.Minute)}
	http.Redirect(w, r, q.Get("redirect_to")+"?code="+code, http.StatusFound)
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

func (f *Fake) userJSON(u *user) map[string]any {
	return map[string]any{"id": u.ID, "aud": "authenticated", "role": "authenticated", "email": u.Email, "phone": u.Phone,
		"app_metadata":  map[string]any{"provider": u.Provider, "providers": []string{u.Provider}},
		"user_metadata": u.Metadata, "identities": []any{}, "factors": []any{},
		"created_at": u.CreatedAt.Format(time.RFC3339Nano), "last_sign_in_at": time.Now().UTC().Format(time.RFC3339Nano)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
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
