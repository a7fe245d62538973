package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/tollgate/tollgate/internal/identity"
)

// Refusals the forms make themselves, before any call.
var (
	errPasswordTooLong = errors.New("password longer than 72 bytes")
	errNoRecipient     = errors.New("neither an email address nor a phone number")
)

// failure is the forms' one mapping of an error to the status and alert the form name
// shows: the forms' own refusals, the identity service's, and failures of the identity
// service or the database (5xx, timeouts, garbage), which answer 503 "temporarily
// unavailable" — naming what the form does: sign-up, a password reset or sign-in — with the
// values kept.
func failure(err error, name string) (status int, alert string) {
	switch {
	case errors.Is(err, errPasswordTooLong):
		return http.StatusUnprocessableEntity, msgPasswordTooLong
	case errors.Is(err, errNoRecipient):
		return http.StatusUnprocessableEntity, "Enter your email address."
	case errors.Is(err, identity.ErrNotConfigured):
		return http.StatusServiceUnavailable, notConfigured(name)
	}
	e, ok := identity.AsError(err)
	if !ok {
		return http.StatusServiceUnavailable, unavailable(name)
	}
	switch {
	case e.Kind() != "" && e.Message != "":
		return http.StatusUnprocessableEntity, e.Message // a weak password or a PKCE failure: the identity service says why best
	case e.Code == "over_email_send_rate_limit", e.Code == "over_sms_send_rate_limit", e.Code == "over_request_rate_limit":
		return http.StatusTooManyRequests, msgTooManyEmails
	case e.Code == "email_not_confirmed":
		return http.StatusUnprocessableEntity, "Please confirm your email address first; check your inbox for the link."
	case e.Code == "otp_expired":
		// The identity service says "Token has expired or is invalid": the form asks for a code.
		return http.StatusUnprocessableEntity, msgCodeWrong
	case e.Code == "same_password" && e.Message != "":
		return http.StatusUnprocessableEntity, e.Message
	}
	return http.StatusUnprocessableEntity, msgInvalidCredentials
}

// activity is what the form name does, as its messages name it.
func activity(name string) string {
	switch name {
	case "registration_new":
		return "Sign-up"
	case "passwords_new", "passwords_edit":
		return "Password reset"
	}
	return "Sign-in"
}

// unavailable is the alert of a form whose identity service or database failed.
func unavailable(name string) string {
	return activity(name) + " is temporarily unavailable. Please try again in a moment."
}

// notConfigured is the alert of a form on a server with no identity service.
func notConfigured(name string) string {
	return activity(name) + " is not set up on this server yet: its AUTH_URL does not name an identity service."
}

// refuse re-renders the form name with the answer to err, logging why once (action names
// the step). A failure of the database is only a debug line here: the database's outage log
// reports the outage itself, once.
func (w *Web) refuse(rw http.ResponseWriter, r *http.Request, action, name string, p page, err error) {
	w.logFailure(r, action, err)
	var status int
	status, p.Alert = failure(err, name)
	w.render(rw, r, status, name, p)
}

// logFailure records why a step failed, and on which path: for the identity service, its
// code and status, never the form values.
func (w *Web) logFailure(r *http.Request, action string, err error) {
	if e, ok := identity.AsError(err); ok {
		w.opts.Log.InfoContext(r.Context(), "identity service refused", "action", action, "path", r.URL.Path, "status", e.Status, "error_code", e.Code)
		return
	}
	if errors.Is(err, identity.ErrUnavailable) {
		w.opts.Log.WarnContext(r.Context(), "identity service unavailable", "action", action, "path", r.URL.Path, "error", err.Error())
		return
	}
	w.opts.Log.DebugContext(r.Context(), "form failed", "action", action, "path", r.URL.Path, "error", err.Error())
}

// sessionFailed answers a request whose session could not be loaded or saved: the database
// is down or too slow. scs calls it before (or instead of) the route's handler, so the form
// the request came from is found by its path, and shown again with its values, except
// passwords. The store has reported the failure to the database's outage log; the request's
// own debug line is written here.
func (w *Web) sessionFailed(rw http.ResponseWriter, r *http.Request, err error) {
	w.logFailure(r, "session", err)
	name, p := w.formOf(r)
	var status int
	status, p.Alert = failure(err, name)
	w.write(rw, r, status, name, p)
}

// formOf is the form a path serves, with the values the request carries.
func (w *Web) formOf(r *http.Request) (string, page) {
	email, phone := strings.TrimSpace(r.FormValue("email")), strings.TrimSpace(r.FormValue("phone"))
	path := r.URL.Path
	switch {
	case path == "/session/new", path == "/session":
		return "session_new", page{Title: "Sign in", Email: email, OAuthProviders: w.oauthLinks()}
	case path == "/registration/new", path == "/registration":
		return "registration_new", page{Title: "Create your account", Email: email}
	case path == "/passwords/new", path == "/passwords":
		return "passwords_new", page{Title: "Reset your password", Email: email}
	case strings.HasPrefix(path, "/passwords/"):
		token := strings.TrimSuffix(strings.TrimPrefix(path, "/passwords/"), "/edit")
		return "passwords_edit", page{Title: "Choose a new password", Token: token}
	case path == "/otp/new", path == "/otp":
		return "otp_new", page{Title: titleOTPRequest, Email: email}
	case path == "/otp/verify":
		return "otp_verify", page{Title: otpVerifyTitle(phone), Email: email, Phone: phone, Type: otpType(r.FormValue("type"))}
	}
	return "message", page{Title: "Temporarily unavailable"}
}
