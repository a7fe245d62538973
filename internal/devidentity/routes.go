package devidentity

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// Handler serves the emulated GoTrue API under the base URL's path.
func (e *Emulator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+e.path+"/.well-known/jwks.json", e.jwks)
	mux.HandleFunc("POST "+e.path+"/token", e.token)
	mux.HandleFunc("POST "+e.path+"/signup", e.signup)
	mux.HandleFunc("POST "+e.path+"/recover", e.recover)
	mux.HandleFunc("POST "+e.path+"/otp", e.otp)
	mux.HandleFunc("POST "+e.path+"/verify", e.verify)
	mux.HandleFunc("GET "+e.path+"/verify", e.verifyLink)
	mux.HandleFunc("GET "+e.path+"/user", e.getUser)
	mux.HandleFunc("PUT "+e.path+"/user", e.putUser)
	mux.HandleFunc("POST "+e.path+"/logout", e.logout)
	mux.HandleFunc("GET "+e.path+"/authorize", e.authorize)
	mux.HandleFunc(e.path+"/", func(w http.ResponseWriter, r *http.Request) {
		e.fail(w, r, http.StatusNotFound, "not_found", "The identity service has no such endpoint.")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Header.Get("Content-Type") != "" {
			var body map[string]any
			if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&body) != nil {
				e.fail(w, r, http.StatusBadRequest, "bad_json", "Could not parse request body as JSON")
				return
			}
			b, _ := json.Marshal(body)
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		mux.ServeHTTP(w, r)
	})
}

// fail answers in GoTrue's error format: the newer one with X-Supabase-Api-Version.
func (e *Emulator) fail(w http.ResponseWriter, r *http.Request, status int, code, msg string, extra ...map[string]any) {
	body := map[string]any{"code": status, "error_code": code, "msg": msg}
	if r.Header.Get("X-Supabase-Api-Version") == "2024-01-01" {
		body = map[string]any{"code": code, "message": msg}
	}
	for _, x := range extra {
		for k, v := range x {
			body[k] = v
		}
	}
	w.Header().Set("X-Sb-Error-Code", code)
	writeJSON(w, status, body)
}

// failStore answers a failure of the store: a 500, which tollgate's forms show as
// unavailable.
func (e *Emulator) failStore(w http.ResponseWriter, r *http.Request, err error) {
	e.log.ErrorContext(r.Context(), "identity emulator: its store failed", "error", err.Error())
	e.fail(w, r, http.StatusInternalServerError, "unexpected_failure", "The identity service could not reach its store.")
}

// weakPassword refuses a password shorter than Supabase Auth's default minimum, 6.
func (e *Emulator) weakPassword(w http.ResponseWriter, r *http.Request) {
	e.fail(w, r, http.StatusUnprocessableEntity, "weak_password", "Password should be at least 6 characters.",
		map[string]any{"weak_password": map[string]any{"reasons": []string{"length"}}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// body is a request's JSON object; a body that is not one reads as empty.
func body(r *http.Request) map[string]any {
	var m map[string]any
	json.NewDecoder(r.Body).Decode(&m)
	if m == nil {
		m = map[string]any{}
	}
	return m
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }
