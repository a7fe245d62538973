package devidentity

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// authorize stands in for the whole provider round trip: it signs in (or creates) a user of
// that provider and redirects back with a PKCE code (api/external.go). A provider that is
// not enabled gets Supabase Auth's JSON error, which is what a browser would end on.
func (e *Emulator) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	provider := q.Get("provider")
	if !slices.Contains(e.OAuthProviders, provider) {
		e.fail(w, r, http.StatusBadRequest, "validation_failed", "Unsupported provider: provider is not enabled")
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	redirectTo := e.redirectTarget(q.Get("redirect_to"))
	if e.DenyOAuth {
		params := url.Values{"error": {"access_denied"}, "error_description": {"The user denied the request"}}
		http.Redirect(w, r, redirectTo+"?"+params.Encode()+"#"+params.Encode()+"&sb=", http.StatusFound)
		return
	}
	email := provider + "-user@example.test"
	u, err := e.store.UserByEmail(r.Context(), email)
	if errors.Is(err, ErrNoUser) {
		u, err = e.addUser(r.Context(), User{Email: email, Provider: provider, Confirmed: true})
	}
	if err != nil {
		e.failStore(w, r, err)
		return
	}
	now := time.Now()
	fl := &flow{challenge: q.Get("code_challenge"), method: "oauth", userID: u.ID, authCode: newUUID(), created: now, issued: now}
	e.flows = append(e.flows, fl)
	http.Redirect(w, r, redirectTo+"?"+url.Values{"code": {fl.authCode}}.Encode(), http.StatusFound)
}
