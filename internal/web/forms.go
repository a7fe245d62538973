package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"tollgate/internal/identity"
)

// MaxPasswordBytes matches the identity service's hashing limit (bcrypt reads 72 bytes).
const MaxPasswordBytes = 72

const (
	msgInvalidCredentials = "Invalid credentials"
	msgUnavailable        = "Sign-in is temporarily unavailable. Please try again in a moment."
	msgPasswordTooLong    = "Passwords can be at most 72 bytes long. Please choose a shorter one."
	msgCheckEmail         = "Check your email to confirm your account"
	msgResetSent          = "If that address has an account, we sent instructions to reset your password."
	msgCodeSent           = "We sent you a code"
	msgPasswordUpdated    = "Your password has been updated"
	msgSignedOut          = "You have been signed out."
	msgSessionEnded       = "Your session has ended. Please sign in again."
	msgTooManyEmails      = "Too many messages were sent. Please wait a few minutes and try again."
	msgLinkProblem        = "That link has expired or was already used. Please start again."
	msgResetNeedsLink     = "Open the link in your password reset email to choose a new password."
	msgCancelled          = "Sign-in was cancelled."
	msgSignInFailed       = "Sign-in failed. Please try again."
	msgEmailConfirmed     = "Your email address is confirmed. Please sign in."
	msgOtherBrowser       = msgEmailConfirmed + " (The link was opened in another browser than the one that asked for it, so it could not sign you in. To reset your password, ask for a new link in this browser.)"
)

// failure maps an identity error to the form's outcome: the one place forms decide what
// an upstream refusal shows. 5xx, timeouts and garbage give 503 with the values kept.
func failure(err error) (status int, alert string) {
	if isUnavailable(err) {
		return http.StatusServiceUnavailable, msgUnavailable
	}
	e, ok := identity.AsError(err)
	if !ok {
		return http.StatusServiceUnavailable, msgUnavailable
	}
	switch {
	case e.Kind() != "" && e.Message != "":
		return http.StatusUnprocessableEntity, e.Message // SPEC 7.2: shown with the upstream message
	case e.Code == "over_email_send_rate_limit", e.Code == "over_sms_send_rate_limit", e.Code == "over_request_rate_limit":
		return http.StatusTooManyRequests, msgTooManyEmails
	}
	return http.StatusUnprocessableEntity, msgInvalidCredentials
}

// --- sign-in and sign-out

func (w *Web) signInForm(rw http.ResponseWriter, r *http.Request) {
	if to := r.URL.Query().Get("redirect_to"); to != "" {
		w.sessions.Put(r.Context(), keyReturnTo, safeRedirect(to))
	}
	w.render(rw, r, http.StatusOK, "session_new", page{Title: "Sign in", Email: r.URL.Query().Get("email"), OAuthProviders: w.oauthLinks()})
}

func (w *Web) createSession(rw http.ResponseWriter, r *http.Request) {
	email, password := strings.TrimSpace(r.PostFormValue("email")), r.PostFormValue("password")
	again := page{Title: "Sign in", Email: email, OAuthProviders: w.oauthLinks()}
	if len(password) > MaxPasswordBytes {
		again.Alert = msgPasswordTooLong
		w.render(rw, r, http.StatusUnprocessableEntity, "session_new", again)
		return
	}
	s, err := w.opts.Identity.SignInWithPassword(r.Context(), email, password)
	if err != nil {
		status, alert := failure(err)
		if e, ok := identity.AsError(err); ok && e.Code == "email_not_confirmed" {
			alert = "Please confirm your email address first; check your inbox for the link."
		}
		again.Alert = alert
		w.logFailure(r, "sign-in", err)
		w.render(rw, r, status, "session_new", again)
		return
	}
	w.finishSignIn(rw, r, s)
}

// finishSignIn establishes the session and goes where the user was headed.
func (w *Web) finishSignIn(rw http.ResponseWriter, r *http.Request, s identity.Session) {
	returnTo := w.sessions.PopString(r.Context(), keyReturnTo)
	if err := w.signIn(r.Context(), s); err != nil {
		w.opts.Log.ErrorContext(r.Context(), "session renewal failed", "error", err)
		w.render(rw, r, http.StatusServiceUnavailable, "message", page{Title: "Sign in", Alert: msgUnavailable})
		return
	}
	w.redirect(rw, r, returnTo, "", "")
}

func (w *Web) destroySession(rw http.ResponseWriter, r *http.Request) {
	if access := w.sessions.GetString(r.Context(), keyAccessToken); access != "" {
		if err := w.opts.Identity.Logout(r.Context(), access); err != nil {
			w.logFailure(r, "sign-out", err) // the local session ends regardless
		}
	}
	if err := w.sessions.Destroy(r.Context()); err != nil {
		w.opts.Log.ErrorContext(r.Context(), "session destroy failed", "error", err)
	}
	w.redirect(rw, r, "/session/new", keyNotice, msgSignedOut)
}

// --- sign-up

func (w *Web) signUpForm(rw http.ResponseWriter, r *http.Request) {
	w.render(rw, r, http.StatusOK, "registration_new", page{Title: "Create your account", Email: r.URL.Query().Get("email")})
}

func (w *Web) createRegistration(rw http.ResponseWriter, r *http.Request) {
	email, password := strings.TrimSpace(r.PostFormValue("email")), r.PostFormValue("password")
	again := page{Title: "Create your account", Email: email}
	if len(password) > MaxPasswordBytes {
		again.Alert = msgPasswordTooLong
		w.render(rw, r, http.StatusUnprocessableEntity, "registration_new", again)
		return
	}
	pkce := identity.NewPKCE()
	result, err := w.opts.Identity.SignUp(r.Context(), email, password, map[string]any{}, w.callbackURL(), pkce)
	if e, ok := identity.AsError(err); ok && e.Code == "user_already_exists" {
		// No account enumeration: an existing address gets the same outcome as a new one.
		w.redirect(rw, r, "/session/new", keyNotice, msgCheckEmail)
		return
	}
	if err != nil {
		status, alert := failure(err)
		again.Alert = alert
		w.logFailure(r, "sign-up", err)
		w.render(rw, r, status, "registration_new", again)
		return
	}
	if result.Session != nil {
		w.finishSignIn(rw, r, *result.Session)
		return
	}
	// The confirmation link returns through the callback with a PKCE code.
	w.startFlow(r.Context(), pkce, flowSignUp)
	w.redirect(rw, r, "/session/new", keyNotice, msgCheckEmail)
}

// --- password reset

func (w *Web) resetRequestForm(rw http.ResponseWriter, r *http.Request) {
	w.render(rw, r, http.StatusOK, "passwords_new", page{Title: "Reset your password", Email: r.URL.Query().Get("email")})
}

func (w *Web) createResetRequest(rw http.ResponseWriter, r *http.Request) {
	email := strings.TrimSpace(r.PostFormValue("email"))
	pkce := identity.NewPKCE()
	err := w.opts.Identity.Recover(r.Context(), email, w.callbackURL(), pkce)
	if isUnavailable(err) {
		w.logFailure(r, "password reset request", err)
		w.render(rw, r, http.StatusServiceUnavailable, "passwords_new", page{Title: "Reset your password", Email: email, Alert: msgUnavailable})
		return
	}
	if err != nil {
		// Any refusal (rate limits included) looks the same as success, so the page never
		// tells whether the address has an account.
		w.logFailure(r, "password reset request", err)
	}
	w.startFlow(r.Context(), pkce, flowRecovery)
	w.redirect(rw, r, "/session/new", keyNotice, msgResetSent)
}

func (w *Web) resetForm(rw http.ResponseWriter, r *http.Request) {
	if w.sessions.GetString(r.Context(), keyAccessToken) == "" {
		w.redirect(rw, r, "/passwords/new", keyAlert, msgResetNeedsLink)
		return
	}
	w.render(rw, r, http.StatusOK, "passwords_edit", page{Title: "Choose a new password", Token: r.PathValue("token")})
}

// updatePassword ignores the :token segment: the recovery session authenticates it.
func (w *Web) updatePassword(rw http.ResponseWriter, r *http.Request) {
	password := r.PostFormValue("password")
	again := page{Title: "Choose a new password", Token: r.PathValue("token")}
	if len(password) > MaxPasswordBytes {
		again.Alert = msgPasswordTooLong
		w.render(rw, r, http.StatusUnprocessableEntity, "passwords_edit", again)
		return
	}
	access, err := w.sessionAccessToken(r.Context())
	if err == nil && access == "" {
		w.redirect(rw, r, "/passwords/new", keyAlert, msgResetNeedsLink)
		return
	}
	if err == nil {
		_, err = w.opts.Identity.UpdatePassword(r.Context(), access, password)
	}
	if e, ok := identity.AsError(err); ok && e.Kind() == identity.KindSessionMissing {
		w.sessions.Destroy(r.Context())
		w.redirect(rw, r, "/passwords/new", keyAlert, msgLinkProblem)
		return
	}
	if err != nil {
		status, alert := failure(err)
		if e, ok := identity.AsError(err); ok && e.Code == "same_password" {
			alert = e.Message
		}
		again.Alert = alert
		w.logFailure(r, "password update", err)
		w.render(rw, r, status, "passwords_edit", again)
		return
	}
	w.sessions.Remove(r.Context(), keyRecovery)
	w.redirect(rw, r, "/", keyNotice, msgPasswordUpdated)
}

// --- one-time codes

func (w *Web) otpForm(rw http.ResponseWriter, r *http.Request) {
	w.render(rw, r, http.StatusOK, "otp_new", page{Title: "Sign in with a code", Email: r.URL.Query().Get("email")})
}

func (w *Web) sendOTP(rw http.ResponseWriter, r *http.Request) {
	email, phone := strings.TrimSpace(r.PostFormValue("email")), strings.TrimSpace(r.PostFormValue("phone"))
	if email == "" && phone == "" {
		w.render(rw, r, http.StatusUnprocessableEntity, "otp_new", page{Title: "Sign in with a code", Alert: "Enter your email address."})
		return
	}
	// By e-mail the default template sends only a link, which must come back to this
	// browser's verifier; the code form below serves templates that show a code, and SMS.
	pkce := identity.NewPKCE()
	err := w.opts.Identity.SendOTP(r.Context(), email, phone, false, w.callbackURL(), pkce)
	status, alert := http.StatusOK, ""
	if err != nil {
		w.logFailure(r, "code request", err)
		status, alert = failure(err)
	}
	// Only outages and rate limits are shown: an unknown address must look like a known one.
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		w.render(rw, r, status, "otp_new", page{Title: "Sign in with a code", Email: email, Alert: alert})
		return
	}
	q := url.Values{"email": {email}, "type": {"email"}}
	if phone != "" {
		q = url.Values{"phone": {phone}, "type": {"sms"}}
	} else {
		w.startFlow(r.Context(), pkce, flowMagicLink)
	}
	w.redirect(rw, r, "/otp/verify?"+q.Encode(), keyNotice, msgCodeSent)
}

func (w *Web) otpVerifyForm(rw http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	w.render(rw, r, http.StatusOK, "otp_verify", page{Title: "Enter your code", Email: q.Get("email"), Phone: q.Get("phone"), Type: otpType(q.Get("type"))})
}

func (w *Web) verifyOTP(rw http.ResponseWriter, r *http.Request) {
	email, phone := r.PostFormValue("email"), r.PostFormValue("phone")
	typ, token := otpType(r.PostFormValue("type")), strings.TrimSpace(r.PostFormValue("token"))
	s, err := w.opts.Identity.VerifyOTP(r.Context(), typ, email, phone, token)
	if err != nil {
		status, alert := failure(err)
		if e, ok := identity.AsError(err); ok && e.Code == "otp_expired" && e.Message != "" {
			alert = e.Message
		}
		w.logFailure(r, "code verification", err)
		w.render(rw, r, status, "otp_verify", page{Title: "Enter your code", Email: email, Phone: phone, Type: typ, Alert: alert})
		return
	}
	w.finishSignIn(rw, r, s)
}

// otpType defaults to email and admits only the identity service's OTP types.
func otpType(t string) string {
	switch t {
	case "sms", "phone_change", "email_change", "recovery", "signup", "invite", "magiclink", "email":
		return t
	}
	return "email"
}

// --- account page

func (w *Web) account(rw http.ResponseWriter, r *http.Request) {
	user, err := w.LookupUser(r.Context(), "")
	if user == nil && err == nil {
		w.redirect(rw, r, "/session/new", "", "")
		return
	}
	if err != nil {
		if isUnavailable(err) || errors.Is(err, r.Context().Err()) {
			w.render(rw, r, http.StatusServiceUnavailable, "message", page{Title: "Your account", Alert: msgUnavailable})
			return
		}
		// The identity service no longer knows this session (signed out elsewhere, revoked).
		w.logFailure(r, "user lookup", err)
		w.sessions.Destroy(r.Context())
		w.redirect(rw, r, "/session/new", keyAlert, msgSessionEnded)
		return
	}
	view := &accountView{Email: user.Email}
	if user.Email == "" {
		view.Email = user.Phone
	}
	if w.opts.Billing != nil {
		e, err := w.opts.Billing.Entitlements(r.Context(), user.ID)
		if err != nil {
			w.opts.Log.ErrorContext(r.Context(), "entitlements unavailable", "error", err)
			w.render(rw, r, http.StatusServiceUnavailable, "message", page{Title: "Your account", Alert: msgUnavailable})
			return
		}
		if p := e.Plan(); p != nil {
			view.Plan = p.Name
		}
		if g := e.Governing(); g != nil {
			view.Status = g.Status
			if g.CurrentPeriodEnd != nil {
				view.PeriodEnd = g.CurrentPeriodEnd.Format(time.DateOnly)
			}
		} else if len(e.Subscriptions) > 0 {
			view.Status = e.Subscriptions[0].Status
		}
		for name, v := range e.Effective {
			switch v := v.(type) {
			case bool:
				if v {
					view.Entitlements = append(view.Entitlements, name)
				}
			case int64:
				view.Entitlements = append(view.Entitlements, fmt.Sprintf("%s: %d", name, v))
			}
		}
		sort.Strings(view.Entitlements)
	}
	w.render(rw, r, http.StatusOK, "account", page{Title: "Your account", Account: view})
}

// logFailure records why an identity call failed: code and status, never the form values.
func (w *Web) logFailure(r *http.Request, action string, err error) {
	attrs := []any{"action", action}
	if e, ok := identity.AsError(err); ok {
		attrs = append(attrs, "status", e.Status, "error_code", e.Code)
	} else {
		attrs = append(attrs, "error", err.Error())
	}
	w.opts.Log.InfoContext(r.Context(), "identity service refused", attrs...)
}
