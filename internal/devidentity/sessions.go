package devidentity

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// session is a signed-in session: this process's record of it, so that sign-out, a
// password change and a reused refresh token can end it. A token of a session this
// process does not know (minted by "tollgate dev token", or before a restart) is taken on
// its signature and its user alone.
type session struct {
	id      string
	userID  string
	revoked bool
}

type refresh struct {
	session *session
	used    bool
}

// pending are a user's outstanding secrets, as the users table's confirmation_token and
// recovery_token (the newest e-mail of each kind wins) and the last SMS code.
type pending struct {
	confirmation, recovery *emailToken
	sms                    string
}

// emailToken is an e-mailed secret: the 6-digit code and the hash its link carries,
// prefixed pkce_ in a PKCE flow (api/pkce.go addFlowPrefixToToken).
type emailToken struct {
	code, hash string
	sentAt     time.Time
}

// emailTokenLifetime is GOTRUE_MAILER_OTP_EXP's default (conf/configuration.go).
const emailTokenLifetime = 24 * time.Hour

// flow is a PKCE flow state (models/flow_state.go): created when a call brings a
// code_challenge, given an auth code when its link is verified or the provider answers.
type flow struct {
	challenge, method string
	userID            string
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

// flowIndex is the newest flow that matches, or -1. e.mu is held.
func (e *Emulator) flowIndex(match func(*flow) bool) int {
	for i := len(e.flows) - 1; i >= 0; i-- {
		if match(e.flows[i]) {
			return i
		}
	}
	return -1
}

func (e *Emulator) pendingOf(userID string) *pending {
	p := e.pending[userID]
	if p == nil {
		p = &pending{}
		e.pending[userID] = p
	}
	return p
}

// newSession starts a session for u and answers it. e.mu is held.
func (e *Emulator) newSession(u User) map[string]any {
	s := &session{id: newUUID(), userID: u.ID}
	e.sessions[s.id] = s
	return e.sessionResponse(s, u)
}

// sessionResponse issues a new access token and refresh token for s.
func (e *Emulator) sessionResponse(s *session, u User) map[string]any {
	now := time.Now()
	exp := now.Add(e.TokenTTL)
	claims := jwt.MapClaims{
		"iss": e.base, "sub": u.ID, "aud": "authenticated", "exp": exp.Unix(), "iat": now.Unix(),
		"email": u.Email, "phone": u.Phone, "role": "authenticated", "aal": "aal1",
		"amr": []map[string]any{{"method": "password", "timestamp": now.Unix()}}, "session_id": s.id, "is_anonymous": false,
		"app_metadata":  map[string]any{"provider": u.Provider, "providers": []string{u.Provider}},
		"user_metadata": u.Metadata,
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, e.customised(u.ID, claims))
	tok.Header["kid"] = e.kid
	access, err := tok.SignedString(e.key)
	if err != nil {
		panic("identity emulator: signing with a P-256 key failed: " + err.Error()) // cannot happen with a valid key
	}
	rt := randomHex(12)
	e.refresh[rt] = &refresh{session: s}
	return map[string]any{"access_token": access, "token_type": "bearer", "expires_in": int64(e.TokenTTL / time.Second),
		"expires_at": exp.Unix(), "refresh_token": rt, "user": userJSON(u)}
}

// userJSON follows models/user.go: email_confirmed_at is there only once the address is
// confirmed (the emulator dates that to the user's creation).
func userJSON(u User) map[string]any {
	created := u.CreatedAt.UTC().Format(time.RFC3339Nano)
	body := map[string]any{"id": u.ID, "aud": "authenticated", "role": "authenticated", "email": u.Email, "phone": u.Phone,
		"app_metadata":  map[string]any{"provider": u.Provider, "providers": []string{u.Provider}},
		"user_metadata": u.Metadata, "identities": []any{}, "factors": []any{},
		"created_at": created, "updated_at": created, "last_sign_in_at": time.Now().UTC().Format(time.RFC3339Nano)}
	if u.Confirmed && u.Email != "" {
		body["email_confirmed_at"], body["confirmed_at"] = created, created
	}
	return body
}

// bearer is the session and user of the request's access token. A token that does not
// verify is bad_jwt; one of an ended session, or of a user that is gone, is refused as
// Supabase Auth does (api/auth.go). e.mu is held.
func (e *Emulator) bearer(w http.ResponseWriter, r *http.Request) (*session, User, bool) {
	raw := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return &e.key.PublicKey, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer(e.base), jwt.WithAudience("authenticated"))
	if err != nil {
		e.fail(w, r, http.StatusForbidden, "bad_jwt", "invalid JWT: unable to parse or verify signature")
		return nil, User{}, false
	}
	sid, _ := claims["session_id"].(string)
	sub, _ := claims["sub"].(string)
	s := e.sessions[sid]
	if s == nil {
		s = &session{id: sid, userID: sub}
		e.sessions[sid] = s
	}
	if s.revoked {
		e.fail(w, r, http.StatusForbidden, "session_not_found", "Session from session_id claim in JWT does not exist")
		return nil, User{}, false
	}
	u, err := e.store.UserByID(r.Context(), sub)
	switch {
	case errors.Is(err, ErrNoUser):
		e.fail(w, r, http.StatusForbidden, "user_not_found", "User from sub claim in JWT does not exist")
		return nil, User{}, false
	case err != nil:
		e.failStore(w, r, err)
		return nil, User{}, false
	}
	return s, u, true
}

func (e *Emulator) jwks(w http.ResponseWriter, _ *http.Request) {
	x, y := make([]byte, 32), make([]byte, 32)
	e.key.PublicKey.X.FillBytes(x)
	e.key.PublicKey.Y.FillBytes(y)
	w.Header().Set("Cache-Control", "public, max-age=600")
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]any{{
		"kty": "EC", "crv": "P-256", "kid": e.kid, "alg": "ES256", "use": "sig", "key_ops": []string{"verify"},
		"x": base64.RawURLEncoding.EncodeToString(x), "y": base64.RawURLEncoding.EncodeToString(y),
	}}})
}

// customised is claims as the access token hook answers them (internal/hooks/v0hooks:
// the hook's output replaces the claims), or as they are without a hook, or when it fails
// (the hook of tollgate's own never fails a sign-in).
func (e *Emulator) customised(userID string, claims jwt.MapClaims) jwt.MapClaims {
	if e.hook == nil {
		return claims
	}
	input, err := json.Marshal(claims)
	if err != nil {
		return claims
	}
	output, err := e.hook(context.Background(), userID, input)
	var customised jwt.MapClaims
	if err != nil || json.Unmarshal(output, &customised) != nil {
		e.log.Warn("identity emulator: the access token hook failed; the token carries the claims unchanged", "error", fmt.Sprint(err))
		return claims
	}
	return customised
}
