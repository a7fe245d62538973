package devidentity

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// recover follows api/recover.go: the same empty answer whether or not the address exists.
func (e *Emulator) recover(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	email, _ := normaliseEmail(str(b, "email"))
	e.mu.Lock()
	defer e.mu.Unlock()
	u, err := e.store.UserByEmail(r.Context(), email)
	switch {
	case err == nil:
		e.sendEmail(r, u, "recovery", str(b, "code_challenge"))
	case !errors.Is(err, ErrNoUser):
		e.failStore(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

// otp follows api/otp.go and api/magic_link.go: SMS gets a code; e-mail gets a magic link,
// or the confirmation e-mail when the address is new or unconfirmed.
func (e *Emulator) otp(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	phone := str(b, "phone")
	if phone != "" && !e.Phone {
		e.fail(w, r, http.StatusUnprocessableEntity, "phone_provider_disabled", "Phone sign-in is not enabled on this identity service.")
		return
	}
	email, err := normaliseEmail(str(b, "email"))
	if phone == "" && err != nil {
		e.fail(w, r, http.StatusBadRequest, "validation_failed", "Unable to validate email address: invalid format")
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var u User
	if phone != "" {
		u, err = e.store.UserByPhone(r.Context(), phone)
	} else {
		u, err = e.store.UserByEmail(r.Context(), email)
	}
	if errors.Is(err, ErrNoUser) {
		if create, _ := b["create_user"].(bool); !create {
			e.fail(w, r, http.StatusUnprocessableEntity, "otp_disabled", "Signups not allowed for otp")
			return
		}
		if phone != "" {
			email = ""
		}
		u, err = e.addUser(r.Context(), User{Email: email, Phone: phone, Confirmed: phone != "" || e.Autoconfirm})
	}
	switch {
	case err != nil:
		e.failStore(w, r, err)
		return
	case phone != "":
		code := sixDigits()
		e.pendingOf(u.ID).sms = code
		e.texter(r.Context(), phone, code)
	case !u.Confirmed:
		e.sendEmail(r, u, "signup", str(b, "code_challenge"))
	default:
		e.sendEmail(r, u, "magiclink", str(b, "code_challenge"))
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

// sendEmail "sends" an e-mail of a kind: a new secret replaces the user's pending one of
// that kind, and a code_challenge makes it a PKCE flow (api/pkce.go generateFlowState).
// The link is mailer/templatemailer.go's ConfirmationURL; redirect_to is the call's own
// when allowed, else the site URL (utilities/request.go GetReferrer). e.mu is held.
func (e *Emulator) sendEmail(r *http.Request, u User, kind, challenge string) {
	code := sixDigits()
	tok := &emailToken{code: code, hash: tokenHash(u.Email, code), sentAt: time.Now()}
	if challenge != "" {
		tok.hash = "pkce_" + tok.hash
		e.flows = append(e.flows, &flow{challenge: challenge, method: kind, userID: u.ID, created: time.Now()})
	}
	if p := e.pendingOf(u.ID); kind == "signup" {
		p.confirmation = tok
	} else {
		p.recovery = tok
	}
	redirectTo := e.redirectTarget(r.URL.Query().Get("redirect_to"))
	m := Email{To: u.Email, Type: kind,
		Link: e.base + "/verify?" + url.Values{"token": {tok.hash}, "type": {kind}, "redirect_to": {redirectTo}}.Encode()}
	if e.CodesInEmails {
		m.Code = code
	}
	e.mailer(r.Context(), m, code)
}

// verify is POST /verify, a code typed in (api/verify.go verifyPost, verifyUserAndToken):
// type email tries the confirmation, then the recovery secret; a PKCE-flow secret takes
// its code too. The answer is a session, in the body.
func (e *Emulator) verify(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	phone, code := str(b, "phone"), str(b, "token")
	email, _ := normaliseEmail(str(b, "email"))
	e.mu.Lock()
	defer e.mu.Unlock()
	var u User
	var err error
	if phone != "" {
		u, err = e.store.UserByPhone(r.Context(), phone)
	} else {
		u, err = e.store.UserByEmail(r.Context(), email)
	}
	if err != nil && !errors.Is(err, ErrNoUser) {
		e.failStore(w, r, err)
		return
	}
	if err != nil || code == "" || !e.takeCode(u, str(b, "type"), code) {
		e.fail(w, r, http.StatusForbidden, "otp_expired", "Token has expired or is invalid")
		return
	}
	if err := e.confirm(r, &u); err != nil {
		e.failStore(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e.newSession(u))
}

// takeCode uses up u's pending secret of typ that code matches. e.mu is held.
func (e *Emulator) takeCode(u User, typ, code string) bool {
	p := e.pendingOf(u.ID)
	if typ == "sms" || typ == "phone_change" {
		ok := p.sms != "" && subtle.ConstantTimeCompare([]byte(p.sms), []byte(code)) == 1
		if ok {
			p.sms = ""
		}
		return ok
	}
	var kinds []**emailToken
	switch typ {
	case "email":
		kinds = []**emailToken{&p.confirmation, &p.recovery}
	case "signup", "invite":
		kinds = []**emailToken{&p.confirmation}
	case "recovery", "magiclink":
		kinds = []**emailToken{&p.recovery}
	}
	for _, k := range kinds {
		if t := *k; t != nil && time.Since(t.sentAt) < emailTokenLifetime && strings.TrimPrefix(t.hash, "pkce_") == tokenHash(u.Email, code) {
			*k = nil
			return true
		}
	}
	return false
}

// confirm marks u's address confirmed: verifying any secret does (signupVerify,
// recoverVerify).
func (e *Emulator) confirm(r *http.Request, u *User) error {
	if u.Confirmed {
		return nil
	}
	u.Confirmed = true
	return e.store.SaveUser(r.Context(), *u)
}

// verifyLink is GET /verify, the e-mailed link (api/verify.go verifyGet). A pkce_ token
// redirects to redirect_to with ?code=…; any other is the implicit flow, whose tokens go in
// the URL fragment. Failures redirect with error, error_code and error_description: in the
// query only for PKCE, always in the fragment (prepErrorRedirectURL).
func (e *Emulator) verifyLink(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	token, kind, redirectTo := q.Get("token"), q.Get("type"), e.redirectTarget(q.Get("redirect_to"))
	pkce := strings.HasPrefix(token, "pkce_")
	e.mu.Lock()
	defer e.mu.Unlock()
	userID := ""
	for id, p := range e.pending {
		t := &p.recovery
		if kind == "signup" || kind == "invite" {
			t = &p.confirmation
		}
		if *t != nil && (*t).hash == token && time.Since((*t).sentAt) < emailTokenLifetime {
			userID, *t = id, nil
		}
	}
	u, err := e.store.UserByID(r.Context(), userID)
	if userID == "" || err != nil {
		e.redirectError(w, r, redirectTo, pkce, http.StatusForbidden, "otp_expired", "Email link is invalid or has expired")
		return
	}
	if err := e.confirm(r, &u); err != nil {
		e.redirectError(w, r, redirectTo, pkce, http.StatusInternalServerError, "unexpected_failure", "The identity service could not reach its store.")
		return
	}
	if !pkce {
		s := e.newSession(u)
		fragment := url.Values{"type": {kind}}
		for _, k := range []string{"access_token", "refresh_token", "token_type"} {
			fragment.Set(k, fmt.Sprint(s[k]))
		}
		http.Redirect(w, r, redirectTo+"#"+fragment.Encode(), http.StatusSeeOther)
		return
	}
	i := e.flowIndex(func(fl *flow) bool { return fl.userID == u.ID && fl.method == kind })
	if i < 0 { // api/pkce.go issueAuthCode
		e.redirectError(w, r, redirectTo, pkce, http.StatusUnprocessableEntity, "flow_state_not_found", "No valid flow state found for user.")
		return
	}
	fl := e.flows[i]
	fl.authCode, fl.issued = newUUID(), time.Now()
	http.Redirect(w, r, redirectTo+"?"+url.Values{"code": {fl.authCode}}.Encode(), http.StatusSeeOther)
}

// redirectError sends the browser back to redirectTo with an error, as verify.go's
// prepErrorRedirectURL does; error is named only for statuses in errors.go's oauthErrorMap.
func (e *Emulator) redirectError(w http.ResponseWriter, r *http.Request, redirectTo string, inQuery bool, status int, code, description string) {
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
