package devidentity

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// The service answers in GoTrue's shapes: errors as {"code", "error_code", "msg"} with the
// code in X-Sb-Error-Code too, sessions and users as Supabase Auth returns them.

func fail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Sb-Error-Code", code)
	writeJSON(w, status, map[string]any{"code": status, "error_code": code, "msg": msg})
}

// failStore answers a database failure: a 500, which tollgate's forms show as unavailable.
func (s *Service) failStore(w http.ResponseWriter, r *http.Request, err error) {
	s.log.ErrorContext(r.Context(), "development identity service: database failed", "error", err.Error())
	fail(w, http.StatusInternalServerError, "unexpected_failure", "The development identity service could not reach its database.")
}

// weakPassword refuses a password shorter than Supabase Auth's default minimum, 6.
func weakPassword(w http.ResponseWriter) {
	w.Header().Set("X-Sb-Error-Code", "weak_password")
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"code": 422, "error_code": "weak_password",
		"msg": "Password should be at least 6 characters.", "weak_password": map[string]any{"reasons": []string{"length"}}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// body is a request's JSON object; a body that is not one reads as empty.
func body(r *http.Request) map[string]string {
	var raw map[string]any
	json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<10)).Decode(&raw)
	out := map[string]string{}
	for k, v := range raw {
		if s, ok := v.(string); ok {
			out[k] = s
		}
		if b, ok := v.(bool); ok && b {
			out[k] = "true"
		}
	}
	return out
}

func (s *Service) jwks(w http.ResponseWriter, _ *http.Request) {
	x, y := make([]byte, 32), make([]byte, 32)
	s.key.PublicKey.X.FillBytes(x)
	s.key.PublicKey.Y.FillBytes(y)
	w.Header().Set("Cache-Control", "public, max-age=600")
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]any{{
		"kty": "EC", "crv": "P-256", "kid": s.kid, "alg": "ES256", "use": "sig", "key_ops": []string{"verify"},
		"x": base64.RawURLEncoding.EncodeToString(x), "y": base64.RawURLEncoding.EncodeToString(y),
	}}})
}

// token is POST /token with grant_type password, refresh_token or pkce.
func (s *Service) token(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	switch r.URL.Query().Get("grant_type") {
	case "password":
		email, _ := normaliseEmail(b["email"])
		u, err := s.userByEmail(r.Context(), email)
		switch {
		case err != nil && !errors.Is(err, errNoUser):
			s.failStore(w, r, err)
		case err != nil || !u.passwordIs(b["password"]):
			fail(w, http.StatusBadRequest, "invalid_credentials", "Invalid login credentials")
		default:
			writeJSON(w, http.StatusOK, s.session(u))
		}
	case "refresh_token":
		claims, err := s.parse(b["refresh_token"], audRefresh)
		if err != nil {
			fail(w, http.StatusBadRequest, "refresh_token_not_found", "Invalid Refresh Token: Refresh Token Not Found")
			return
		}
		s.sessionFor(w, r, claim(claims, "sub"))
	case "pkce":
		claims, err := s.parse(b["auth_code"], audCode)
		switch {
		case errors.Is(err, errExpired):
			fail(w, http.StatusUnprocessableEntity, "flow_state_expired", "invalid flow state, flow state has expired")
		case err != nil:
			fail(w, http.StatusNotFound, "flow_state_not_found", "invalid flow state, no valid flow state found")
		case s256(b["code_verifier"]) != claim(claims, "code_challenge"):
			fail(w, http.StatusBadRequest, "bad_code_verifier", "code challenge does not match previously saved code verifier")
		default:
			s.sessionFor(w, r, claim(claims, "sub"))
		}
	default:
		fail(w, http.StatusBadRequest, "unsupported_grant_type", "unsupported_grant_type")
	}
}

// sessionFor answers a new session for the user with id, if they still exist.
func (s *Service) sessionFor(w http.ResponseWriter, r *http.Request, id string) {
	u, err := s.userByID(r.Context(), id)
	switch {
	case errors.Is(err, errNoUser):
		fail(w, http.StatusForbidden, "user_not_found", "User from sub claim in JWT does not exist")
	case err != nil:
		s.failStore(w, r, err)
	default:
		writeJSON(w, http.StatusOK, s.session(u))
	}
}

// signup creates a user, confirmed at once, and answers a session (as Supabase Auth does
// with e-mail confirmations off).
func (s *Service) signup(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	email, err := normaliseEmail(b["email"])
	if err != nil {
		fail(w, http.StatusBadRequest, "validation_failed", "Unable to validate email address: invalid format")
		return
	}
	if len(b["password"]) < 6 {
		weakPassword(w)
		return
	}
	u, err := s.addUser(r.Context(), email, b["password"])
	switch {
	case errors.Is(err, errEmailTaken):
		fail(w, http.StatusUnprocessableEntity, "user_already_exists", "User already registered")
	case err != nil:
		s.failStore(w, r, err)
	default:
		writeJSON(w, http.StatusOK, s.session(u))
	}
}

// bearer is the user whose access token the request carries; otherwise it answers.
func (s *Service) bearer(w http.ResponseWriter, r *http.Request) (user, bool) {
	claims, err := s.parse(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), audAccess)
	if err != nil {
		fail(w, http.StatusForbidden, "bad_jwt", "invalid JWT: unable to parse or verify signature")
		return user{}, false
	}
	u, err := s.userByID(r.Context(), claim(claims, "sub"))
	switch {
	case errors.Is(err, errNoUser):
		fail(w, http.StatusForbidden, "user_not_found", "User from sub claim in JWT does not exist")
		return user{}, false
	case err != nil:
		s.failStore(w, r, err)
		return user{}, false
	}
	return u, true
}

func (s *Service) getUser(w http.ResponseWriter, r *http.Request) {
	if u, ok := s.bearer(w, r); ok {
		writeJSON(w, http.StatusOK, s.userJSON(u))
	}
}

// putUser sets the bearer's password (the reset form's last step).
func (s *Service) putUser(w http.ResponseWriter, r *http.Request) {
	b := body(r)
	u, ok := s.bearer(w, r)
	switch {
	case !ok:
	case len(b["password"]) < 6:
		weakPassword(w)
	case u.passwordIs(b["password"]):
		fail(w, http.StatusUnprocessableEntity, "same_password", "New password should be different from the old password.")
	default:
		if err := s.setPassword(r.Context(), u, b["password"]); err != nil {
			s.failStore(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, s.userJSON(u))
	}
}

// logout ends nothing here: tokens are not stored, and expire on their own. tollgate's
// own session ends all the same.
func (s *Service) logout(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.bearer(w, r); ok {
		w.WriteHeader(http.StatusNoContent)
	}
}

// authorize: no OAuth provider is enabled in development.
func (s *Service) authorize(w http.ResponseWriter, _ *http.Request) {
	fail(w, http.StatusBadRequest, "validation_failed", "Unsupported provider: provider is not enabled (the development identity service has no OAuth providers; set AUTH_URL to a real one)")
}

func (s *Service) session(u user) map[string]any {
	access, exp := s.accessToken(u)
	return map[string]any{"access_token": access, "token_type": "bearer", "expires_in": int64(accessTTL.Seconds()),
		"expires_at": exp.Unix(), "refresh_token": s.signed(audRefresh, u.ID, refreshTTL, nil), "user": s.userJSON(u)}
}

func (s *Service) userJSON(u user) map[string]any {
	created := u.CreatedAt.UTC().Format("2006-01-02T15:04:05.999999Z")
	return map[string]any{"id": u.ID, "aud": "authenticated", "role": "authenticated", "email": u.Email, "phone": "",
		"email_confirmed_at": created, "confirmed_at": created,
		"app_metadata":  map[string]any{"provider": "email", "providers": []string{"email"}},
		"user_metadata": map[string]any{}, "identities": []any{}, "factors": []any{},
		"created_at": created, "updated_at": created}
}
