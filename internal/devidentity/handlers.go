package devidentity

import (
	"errors"
	"net/http"
	"time"
)

// token is POST /token with grant_type password, refresh_token or pkce (api/token.go).
func (e *Emulator) token(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	e.mu.Lock()
	defer e.mu.Unlock()
	switch r.URL.Query().Get("grant_type") {
	case "password":
		email, _ := normaliseEmail(str(b, "email"))
		u, err := e.store.UserByEmail(r.Context(), email)
		switch {
		case err != nil && !errors.Is(err, ErrNoUser):
			e.failStore(w, r, err)
		case err != nil || !u.passwordIs(str(b, "password")):
			e.fail(w, r, http.StatusBadRequest, "invalid_credentials", "Invalid login credentials")
		case !u.Confirmed:
			e.fail(w, r, http.StatusBadRequest, "email_not_confirmed", "Email not confirmed")
		default:
			writeJSON(w, http.StatusOK, e.newSession(u))
		}
	case "refresh_token":
		e.refreshToken(w, r, str(b, "refresh_token"))
	case "pkce": // a wrong verifier leaves the flow usable
		i := e.flowIndex(func(fl *flow) bool { return fl.authCode != "" && fl.authCode == str(b, "auth_code") })
		switch {
		case i < 0:
			e.fail(w, r, http.StatusNotFound, "flow_state_not_found", "invalid flow state, no valid flow state found")
		case e.flows[i].expired(e.FlowStateExpiry):
			e.fail(w, r, http.StatusUnprocessableEntity, "flow_state_expired", "invalid flow state, flow state has expired")
		case s256(str(b, "code_verifier")) != e.flows[i].challenge:
			e.fail(w, r, http.StatusBadRequest, "bad_code_verifier", "code challenge does not match previously saved code verifier")
		default:
			userID := e.flows[i].userID
			e.flows = append(e.flows[:i], e.flows[i+1:]...)
			if u, ok := e.userOf(w, r, userID); ok {
				writeJSON(w, http.StatusOK, e.newSession(u))
			}
		}
	default:
		e.fail(w, r, http.StatusBadRequest, "unsupported_grant_type", "unsupported_grant_type")
	}
}

// refreshToken rotates a refresh token; one used twice revokes its whole session, as
// Supabase Auth's reuse detection does. e.mu is held.
func (e *Emulator) refreshToken(w http.ResponseWriter, r *http.Request, token string) {
	rt := e.refresh[token]
	switch {
	case rt == nil:
		e.fail(w, r, http.StatusBadRequest, "refresh_token_not_found", "Invalid Refresh Token: Refresh Token Not Found")
	case rt.used || rt.session.revoked:
		rt.session.revoked = true
		e.fail(w, r, http.StatusBadRequest, "refresh_token_already_used", "Invalid Refresh Token: Already Used")
	default:
		rt.used = true
		if u, ok := e.userOf(w, r, rt.session.userID); ok {
			writeJSON(w, http.StatusOK, e.sessionResponse(rt.session, u))
		}
	}
}

// userOf is the user of a session or flow; otherwise it answers that they are gone.
func (e *Emulator) userOf(w http.ResponseWriter, r *http.Request, id string) (User, bool) {
	u, err := e.store.UserByID(r.Context(), id)
	switch {
	case errors.Is(err, ErrNoUser):
		e.fail(w, r, http.StatusForbidden, "user_not_found", "User from sub claim in JWT does not exist")
		return User{}, false
	case err != nil:
		e.failStore(w, r, err)
		return User{}, false
	}
	return u, true
}

// signup follows api/signup.go: with confirmations on, a new or unconfirmed address gets
// the confirmation e-mail and an existing confirmed one an answer that looks the same;
// with Autoconfirm, a session at once, or user_already_exists.
func (e *Emulator) signup(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	email, err := normaliseEmail(str(b, "email"))
	if err != nil {
		e.fail(w, r, http.StatusBadRequest, "validation_failed", "Unable to validate email address: invalid format")
		return
	}
	password := str(b, "password")
	if len(password) < 6 {
		e.weakPassword(w, r)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	u, err := e.store.UserByEmail(r.Context(), email)
	switch {
	case err == nil && e.Autoconfirm:
		e.fail(w, r, http.StatusUnprocessableEntity, "user_already_exists", "User already registered")
		return
	case err == nil && u.Confirmed:
		writeJSON(w, http.StatusOK, userJSON(User{ID: newUUID(), Email: email, Provider: "email", Metadata: map[string]any{}, CreatedAt: time.Now()}))
		return
	case errors.Is(err, ErrNoUser):
		u, err = e.addUser(r.Context(), User{Email: email, PasswordHash: e.hashPassword(password), Confirmed: e.Autoconfirm})
	}
	if data, ok := b["data"].(map[string]any); ok && err == nil {
		u.Metadata = data
		err = e.store.SaveUser(r.Context(), u)
	}
	switch {
	case errors.Is(err, ErrEmailTaken): // signed up meanwhile
		e.fail(w, r, http.StatusUnprocessableEntity, "user_already_exists", "User already registered")
	case err != nil:
		e.failStore(w, r, err)
	case e.Autoconfirm:
		writeJSON(w, http.StatusOK, e.newSession(u))
	default:
		e.sendEmail(r, u, "signup", str(b, "code_challenge"))
		writeJSON(w, http.StatusOK, userJSON(u))
	}
}

func (e *Emulator) getUser(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, u, ok := e.bearer(w, r); ok {
		writeJSON(w, http.StatusOK, userJSON(u))
	}
}

// putUser sets the bearer's password (the reset form's last step); the user's other
// sessions end.
func (e *Emulator) putUser(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	e.mu.Lock()
	defer e.mu.Unlock()
	s, u, ok := e.bearer(w, r)
	if !ok {
		return
	}
	password := str(b, "password")
	switch {
	case len(password) < 6:
		e.weakPassword(w, r)
		return
	case u.passwordIs(password):
		e.fail(w, r, http.StatusUnprocessableEntity, "same_password", "New password should be different from the old password.")
		return
	}
	u.PasswordHash = e.hashPassword(password)
	if err := e.store.SaveUser(r.Context(), u); err != nil {
		e.failStore(w, r, err)
		return
	}
	for _, other := range e.sessions {
		if other.userID == u.ID && other != s {
			other.revoked = true
		}
	}
	writeJSON(w, http.StatusOK, userJSON(u))
}

// logout ends the bearer's session: its refresh tokens stop working, and so does its access
// token here.
func (e *Emulator) logout(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, _, ok := e.bearer(w, r); ok {
		s.revoked = true
		w.WriteHeader(http.StatusNoContent)
	}
}
