package devidentity

import (
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// E-mails are not sent: what one would hold, its link and its code, is printed to the log,
// where the developer running the server reads it. The link works like Supabase Auth's
// ({{ .ConfirmationURL }}: through GET /verify back to redirect_to), and the code like its
// {{ .Token }} (POST /verify).

// recover "sends" a reset e-mail; the answer is the same whether or not the address exists.
func (s *Service) recover(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	email, _ := normaliseEmail(b["email"])
	u, err := s.userByEmail(r.Context(), email)
	switch {
	case err == nil:
		s.sendEmail(r, u, "recovery", b["code_challenge"])
	case !errors.Is(err, errNoUser):
		s.failStore(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

// otp "sends" a magic link with a code, creating the user when asked to.
func (s *Service) otp(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	if b["phone"] != "" {
		fail(w, http.StatusUnprocessableEntity, "phone_provider_disabled", "Phone sign-in is not available in the development identity service.")
		return
	}
	email, err := normaliseEmail(b["email"])
	if err != nil {
		fail(w, http.StatusBadRequest, "validation_failed", "Unable to validate email address: invalid format")
		return
	}
	u, err := s.userByEmail(r.Context(), email)
	if errors.Is(err, errNoUser) {
		if b["create_user"] != "true" {
			fail(w, http.StatusUnprocessableEntity, "otp_disabled", "Signups not allowed for otp")
			return
		}
		u, err = s.addUser(r.Context(), email, "")
		if errors.Is(err, errEmailTaken) { // signed up meanwhile
			u, err = s.userByEmail(r.Context(), email)
		}
	}
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	s.sendEmail(r, u, "magiclink", b["code_challenge"])
	writeJSON(w, http.StatusOK, map[string]any{})
}

// sendEmail logs the e-mail of a kind (recovery, magiclink) that u would get: a link, PKCE
// when the call brought a code_challenge, and a six-digit code that replaces u's last one.
func (s *Service) sendEmail(r *http.Request, u user, kind, challenge string) {
	code := sixDigits()
	s.mu.Lock()
	s.codes[u.Email] = pendingCode{code: code, kind: kind, expires: s.now().Add(codeTTL)}
	s.mu.Unlock()
	token := s.signed(audLink, u.ID, linkTTL, jwt.MapClaims{"type": kind, "code_challenge": challenge})
	if challenge != "" {
		token = "pkce_" + token // as Supabase Auth marks a PKCE flow's token
	}
	redirectTo := s.redirectTarget(r.URL.Query().Get("redirect_to"))
	link := s.base + "/verify?" + url.Values{"token": {token}, "type": {kind}, "redirect_to": {redirectTo}}.Encode()
	s.log.InfoContext(r.Context(), "development identity service: e-mail not sent; open its link or enter its code",
		"to", u.Email, "kind", kind, "link", link, "code", code)
}

// verifyCode is POST /verify: a code typed in, answered with a session.
func (s *Service) verifyCode(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	email, _ := normaliseEmail(b["email"])
	s.mu.Lock()
	pending, ok := s.codes[email]
	ok = ok && s.now().Before(pending.expires) && b["token"] != "" &&
		subtle.ConstantTimeCompare([]byte(pending.code), []byte(b["token"])) == 1 &&
		(b["type"] == "email" || b["type"] == pending.kind)
	if ok {
		delete(s.codes, email)
	}
	s.mu.Unlock()
	if !ok {
		fail(w, http.StatusForbidden, "otp_expired", "Token has expired or is invalid")
		return
	}
	u, err := s.userByEmail(r.Context(), email)
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.session(u))
}

// verifyLink is GET /verify, an e-mailed link. A PKCE link redirects to redirect_to with
// ?code=…, any other with the session in the fragment; a bad or expired one redirects
// with otp_expired, as Supabase Auth does.
func (s *Service) verifyLink(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	raw, redirectTo := q.Get("token"), s.redirectTarget(q.Get("redirect_to"))
	token, pkce := strings.CutPrefix(raw, "pkce_")
	claims, err := s.parse(token, audLink)
	if err != nil || claim(claims, "type") != q.Get("type") {
		params := url.Values{"error": {"access_denied"}, "error_code": {"otp_expired"}, "error_description": {"Email link is invalid or has expired"}}
		target := redirectTo
		if pkce {
			target += "?" + params.Encode()
		}
		http.Redirect(w, r, target+"#"+params.Encode(), http.StatusSeeOther)
		return
	}
	if pkce {
		code := s.signed(audCode, claim(claims, "sub"), pkceTTL, jwt.MapClaims{"code_challenge": claim(claims, "code_challenge")})
		http.Redirect(w, r, redirectTo+"?"+url.Values{"code": {code}}.Encode(), http.StatusSeeOther)
		return
	}
	u, err := s.userByID(r.Context(), claim(claims, "sub"))
	if err != nil {
		http.Redirect(w, r, redirectTo+"#"+url.Values{"error": {"server_error"}, "error_code": {"user_not_found"}}.Encode(), http.StatusSeeOther)
		return
	}
	session := s.session(u)
	fragment := url.Values{"type": {claim(claims, "type")}}
	for _, k := range []string{"access_token", "refresh_token", "token_type"} {
		fragment.Set(k, fmt.Sprint(session[k]))
	}
	http.Redirect(w, r, redirectTo+"#"+fragment.Encode(), http.StatusSeeOther)
}

func sixDigits() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(1_000_000))
	return fmt.Sprintf("%06d", n.Int64())
}

// redirectTarget is where a link may send the browser: redirect_to when it is on tollgate's
// own origin (PUBLIC_URL), else that origin, as Supabase Auth falls back to its site URL
// for addresses outside its allow list.
func (s *Service) redirectTarget(redirectTo string) string {
	origin := strings.TrimSuffix(s.base, s.path)
	if redirectTo == origin || strings.HasPrefix(redirectTo, origin+"/") {
		return redirectTo
	}
	return origin
}
