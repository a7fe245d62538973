package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/identity"
)

// MaxPasswordBytes matches the identity service's hashing limit (bcrypt reads 72 bytes).
const MaxPasswordBytes = 72

const (
	msgInvalidCredentials = "Invalid credentials"
	msgPasswordTooLong    = "Passwords can be at most 72 bytes long. Please choose a shorter one."
	msgCheckEmail         = "Check your email to confirm your account"
	msgResetSent          = "If that address has an account, we sent instructions to reset your password."
	msgCodeSent           = "We sent you a code"
	msgCodeWrong          = "That code is not right, or has expired. Check it, or ask for a new one."
	msgLinkSent           = "We sent you an email."
	msgPasswordUpdated    = "Your password has been updated"
	msgSignedOut          = "You have been signed out."
	msgSessionEnded       = "Your session has ended. Please sign in again."
	msgTooManyEmails      = "Too many messages were sent. Please wait a few minutes and try again."
	msgLinkProblem        = "That link has expired or was already used. Please start again."
	// msgLinkUsed: a link the identity service no longer knows — used already, or expired.
	// A confirmation link opened twice is the usual case, and its address is confirmed, so
	// this is information, not an alarm; the callback cannot tell which it was.
	msgLinkUsed       = "That link was already used, or has expired. If it was the link confirming your email address, the address is confirmed: sign in below. Otherwise, ask for a new link."
	msgAlreadyUsedIn  = "That link was already used: your email address is confirmed, and you are signed in."
	msgResetNeedsLink = "Open the link in your password reset email to choose a new password."
	msgCancelled      = "Sign-in was cancelled."
	msgSignInFailed   = "Sign-in failed. Please try again."
	msgEmailConfirmed = "Your email address is confirmed. Please sign in."
	// msgOtherBrowser: the callback cannot tell which kind of link it was: every kind comes
	// back to the one callback address (so that an identity service's allow list needs one
	// entry), and only the browser that asked for it holds its kind. So it says, as
	// information rather than success, that nobody is signed in, the one thing every kind
	// has done, and what to do next for each.
	msgOtherBrowser = "You are not signed in: that link was opened in another browser than the one that asked for it. " +
		"Your email address is confirmed. To sign in, use your password below, or ask for a new sign-in link in this browser; " +
		"to reset your password, ask for a new reset link here."
	msgConfirmProviderEmail = "Check your email: confirm your address with the link we sent, then sign in."
)

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
		w.refuse(rw, r, "sign-in", "session_new", again, errPasswordTooLong)
		return
	}
	s, err := w.opts.Identity.SignInWithPassword(r.Context(), email, password)
	if err != nil {
		w.refuse(rw, r, "sign-in", "session_new", again, err)
		return
	}
	w.finishSignIn(rw, r, s)
}

// finishSignIn establishes the session and goes where the user was headed.
func (w *Web) finishSignIn(rw http.ResponseWriter, r *http.Request, s identity.Session) {
	returnTo := w.sessions.PopString(r.Context(), keyReturnTo)
	if err := w.signIn(r.Context(), s); err != nil {
		name, again := w.formOf(r)
		w.refuse(rw, r, "session renewal", name, again, err)
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
		w.logFailure(r, "session destroy", err)
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
		w.refuse(rw, r, "sign-up", "registration_new", again, errPasswordTooLong)
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
		w.refuse(rw, r, "sign-up", "registration_new", again, err)
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
		w.refuse(rw, r, "password reset request", "passwords_new", page{Title: "Reset your password", Email: email}, err)
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
	p := page{Title: "Choose a new password", Token: r.PathValue("token")}
	// Say whose password this is: a reset link opened in a browser signed in as someone
	// else replaced that session, and the page must not leave doubt.
	if user, err := w.LookupUser(r.Context(), ""); err == nil && user != nil {
		p.Email = user.Email
	}
	w.render(rw, r, http.StatusOK, "passwords_edit", p)
}

// updatePassword ignores the :token segment: the recovery session authenticates it.
func (w *Web) updatePassword(rw http.ResponseWriter, r *http.Request) {
	password := r.PostFormValue("password")
	again := page{Title: "Choose a new password", Token: r.PathValue("token")}
	if len(password) > MaxPasswordBytes {
		w.refuse(rw, r, "password update", "passwords_edit", again, errPasswordTooLong)
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
		w.refuse(rw, r, "password update", "passwords_edit", again, err)
		return
	}
	w.redirect(rw, r, "/", keyNotice, msgPasswordUpdated)
}

// --- one-time codes

func (w *Web) otpForm(rw http.ResponseWriter, r *http.Request) {
	w.render(rw, r, http.StatusOK, "otp_new", page{Title: titleOTPRequest, Email: r.URL.Query().Get("email")})
}

func (w *Web) sendOTP(rw http.ResponseWriter, r *http.Request) {
	email, phone := strings.TrimSpace(r.PostFormValue("email")), strings.TrimSpace(r.PostFormValue("phone"))
	if email == "" && phone == "" {
		w.refuse(rw, r, "code request", "otp_new", page{Title: titleOTPRequest}, errNoRecipient)
		return
	}
	// By e-mail the default template sends only a link, which must come back to this
	// browser's verifier; the code form below serves templates that show a code, and SMS.
	pkce := identity.NewPKCE()
	err := w.opts.Identity.SendOTP(r.Context(), email, phone, false, w.callbackURL(), pkce)
	// Only outages and rate limits are shown: an unknown address must look like a known one.
	if status, _ := failure(err, "otp_new"); err != nil && (status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests) {
		w.refuse(rw, r, "code request", "otp_new", page{Title: titleOTPRequest, Email: email}, err)
		return
	} else if err != nil {
		w.logFailure(r, "code request", err)
	}
	q, sent := url.Values{"email": {email}, "type": {"email"}}, msgLinkSent
	if phone != "" {
		q, sent = url.Values{"phone": {phone}, "type": {"sms"}}, msgCodeSent
	} else {
		w.startFlow(r.Context(), pkce, flowMagicLink)
	}
	w.redirect(rw, r, "/otp/verify?"+q.Encode(), keyNotice, sent)
}

func (w *Web) otpVerifyForm(rw http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	w.render(rw, r, http.StatusOK, "otp_verify", page{Title: otpVerifyTitle(q.Get("phone")), Email: q.Get("email"), Phone: q.Get("phone"), Type: otpType(q.Get("type"))})
}

func (w *Web) verifyOTP(rw http.ResponseWriter, r *http.Request) {
	email, phone := r.PostFormValue("email"), r.PostFormValue("phone")
	typ, token := otpType(r.PostFormValue("type")), strings.TrimSpace(r.PostFormValue("token"))
	s, err := w.opts.Identity.VerifyOTP(r.Context(), typ, email, phone, token)
	if err != nil {
		w.refuse(rw, r, "code verification", "otp_verify", page{Title: otpVerifyTitle(phone), Email: email, Phone: phone, Type: typ}, err)
		return
	}
	w.finishSignIn(rw, r, s)
}

// Titles of the one-time code pages: by e-mail the message holds a link, and a code only
// if the identity service's template shows one (Supabase Auth's default does not).
const titleOTPRequest = "Sign in by email"

func otpVerifyTitle(phone string) string {
	if phone != "" {
		return "Enter your code"
	}
	return "Check your email"
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
	user := w.signedIn(rw, r)
	if user == nil {
		return
	}
	view := &accountView{Email: user.Email}
	if user.Email == "" {
		view.Email = user.Phone
	}
	if w.opts.Billing != nil {
		answer, err := w.opts.Billing.View(r.Context(), user.ID)
		if err != nil {
			w.refuse(rw, r, "entitlements", "message", page{Title: "Your account"}, err)
			return
		}
		view.fill(answer)
	}
	if w.opts.Checkout != nil {
		offers, err := w.opts.Checkout.Offers(r.Context(), user.ID)
		if err != nil {
			w.refuse(rw, r, "entitlements", "message", page{Title: "Your account"}, err)
			return
		}
		view.Upgrades, view.ManageBilling = offers.Upgrades, offers.Manage
		if offers.ManagedInApp {
			view.ManagedInApp = billing.ManagedInAppMessage
		}
	}
	w.render(rw, r, http.StatusOK, "account", page{Title: "Your account", Account: view, Notice: checkoutNotices[r.URL.Query().Get("checkout")]})
}

// checkoutNotices greet a user back from the provider's checkout (its default success and
// cancel URLs). The plan shows once the provider's webhooks arrive, usually at once.
var checkoutNotices = map[string]string{
	"success": "Thank you! Your new plan shows here as soon as the payment is confirmed.",
	"cancel":  "Checkout was cancelled; nothing was charged.",
}

// signedIn is the session's user. Without one it answers the request itself (a redirect
// to sign in, or the unavailable page) and returns nil.
func (w *Web) signedIn(rw http.ResponseWriter, r *http.Request) *identity.User {
	user, err := w.LookupUser(r.Context(), "")
	if user == nil && err == nil {
		w.redirect(rw, r, "/session/new", "", "")
		return nil
	}
	if _, rejected := identity.AsError(err); err != nil && !rejected {
		w.refuse(rw, r, "user lookup", "message", page{Title: "Your account"}, err)
		return nil
	}
	if err != nil {
		// The identity service no longer knows this session (signed out elsewhere, revoked).
		w.logFailure(r, "user lookup", err)
		w.sessions.Destroy(r.Context())
		w.redirect(rw, r, "/session/new", keyAlert, msgSessionEnded)
		return nil
	}
	return user
}
