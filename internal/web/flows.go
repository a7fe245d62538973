package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/identity"
)

// PKCE flows: OAuth sign-in and every e-mailed link (sign-up confirmation, password reset,
// e-mail sign-in) come back to GET /oauth/callback with a code that only the verifier kept
// in this browser's session exchanges. Nothing ever asks the identity service for the
// implicit flow, whose tokens would travel in a URL fragment.

// Flow purposes, kept beside the verifier: the callback's outcome depends on them.
const (
	flowOAuth     = "oauth"
	flowSignUp    = "signup"
	flowRecovery  = "recovery"
	flowMagicLink = "magiclink"
)

// flowLifetime is how long a verifier waits for its link: the identity service's e-mailed
// links live a day by default (GOTRUE_MAILER_OTP_EXP=86400).
const flowLifetime = 24 * time.Hour

// startFlow keeps a flow's verifier in the session until the callback finishes it or it
// expires. A newer flow replaces an older one: the identity service, too, honours only the
// newest link it sent an address.
func (w *Web) startFlow(ctx context.Context, pkce identity.PKCE, purpose string) {
	w.sessions.Put(ctx, keyPKCEVerifier, pkce.Verifier)
	w.sessions.Put(ctx, keyPKCEPurpose, purpose)
	w.sessions.Put(ctx, keyPKCEStarted, time.Now().Unix())
}

// pendingFlow is the session's unfinished, unexpired flow, or "" when there is none.
func (w *Web) pendingFlow(ctx context.Context) (verifier, purpose string) {
	// A flow started before the start time was recorded has none: it is left to finish.
	started := w.sessions.GetInt64(ctx, keyPKCEStarted)
	if started != 0 && time.Since(time.Unix(started, 0)) > flowLifetime {
		w.finishFlow(ctx)
		return "", ""
	}
	return w.sessions.GetString(ctx, keyPKCEVerifier), w.sessions.GetString(ctx, keyPKCEPurpose)
}

func (w *Web) finishFlow(ctx context.Context) {
	for _, key := range []string{keyPKCEVerifier, keyPKCEPurpose, keyPKCEStarted} {
		w.sessions.Remove(ctx, key)
	}
}

func (w *Web) oauthAuthorize(rw http.ResponseWriter, r *http.Request) {
	// Only configured providers: any other would end the browser on the identity
	// service's raw JSON error.
	if !slices.Contains(w.opts.OAuthProviders, r.PathValue("provider")) {
		w.notFound(rw, r)
		return
	}
	pkce := identity.NewPKCE()
	w.startFlow(r.Context(), pkce, flowOAuth)
	// The one redirect that leaves the site: to the configured identity service only.
	http.Redirect(rw, r, w.opts.Identity.AuthorizeURL(r.PathValue("provider"), w.callbackURL(), pkce), http.StatusFound)
}

// oauthCallback completes every PKCE flow. The identity service redirects here with
// ?code=… on success, or with error, error_code and error_description (verify.go's
// prepErrorRedirectURL, external.go's redirectErrors). A failure leaves the verifier in
// place, so that the right link still works after a wrong or stale one was opened.
func (w *Web) oauthCallback(rw http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	code := q.Get("code")
	if code == "" || q.Get("error") != "" || q.Get("error_code") != "" {
		w.opts.Log.InfoContext(r.Context(), "sign-in callback without a code", "error", q.Get("error"), "error_code", q.Get("error_code"))
		key, message := callbackFailure(q.Get("error"), q.Get("error_code"))
		if message == msgLinkUsed && w.sessions.GetString(r.Context(), keyAccessToken) != "" {
			// Opened again in the browser it signed in: the address was confirmed then.
			w.redirect(rw, r, "/", keyInfo, msgAlreadyUsedIn)
			return
		}
		w.redirect(rw, r, "/session/new", key, message)
		return
	}
	verifier, purpose := w.pendingFlow(r.Context())
	switch {
	case verifier == "" && w.sessions.GetString(r.Context(), keyAccessToken) != "":
		w.redirect(rw, r, "/", "", "") // a finished flow's callback again (back button): signed in already
		return
	case verifier == "":
		// A link opened in another browser, or after its flow ended here. The identity
		// service redirects with a code only after it verified the link, and verifying
		// confirms the address, so that much is done; signing in must happen here.
		w.redirect(rw, r, "/session/new", keyInfo, msgOtherBrowser)
		return
	}
	s, err := w.opts.Identity.ExchangeCode(r.Context(), code, verifier)
	if err != nil {
		switch _, rejected := identity.AsError(err); {
		case !rejected:
			w.refuse(rw, r, "code exchange", "message", page{Title: "Sign in"}, err)
		case purpose == flowSignUp:
			// The link confirmed the address even though its flow cannot sign in any more
			// (the identity service's flow state lives 5 minutes by default).
			w.redirect(rw, r, "/session/new", keyNotice, msgEmailConfirmed)
		default:
			w.redirect(rw, r, "/session/new", keyAlert, msgLinkProblem)
		}
		if _, rejected := identity.AsError(err); rejected {
			w.logFailure(r, "code exchange", err)
		}
		return
	}
	w.finishFlow(r.Context())
	if purpose == flowRecovery {
		if err := w.signIn(r.Context(), s); err != nil {
			w.refuse(rw, r, "session renewal", "message", page{Title: "Sign in"}, err)
			return
		}
		// The segment is opaque and ignored; the recovery session authenticates the reset.
		w.redirect(rw, r, "/passwords/"+opaqueToken()+"/edit", "", "")
		return
	}
	w.finishSignIn(rw, r, s)
}

// callbackFailure says what an identity-service redirect error means to the user, as an
// alert or, when nothing went wrong but a step is left, a notice.
func callbackFailure(errorParam, errorCode string) (key, message string) {
	switch {
	case errorCode == "otp_expired":
		return keyInfo, msgLinkUsed
	case errorCode == "flow_state_not_found", errorCode == "flow_state_expired", errorCode == "bad_code_verifier":
		return keyAlert, msgLinkProblem
	case errorCode == "provider_email_needs_verification":
		// The OAuth provider vouched for no address: the identity service e-mailed a
		// confirmation link instead of signing in.
		return keyNotice, msgConfirmProviderEmail
	case errorParam == "access_denied" && errorCode == "":
		return keyAlert, msgCancelled // the user turned the OAuth provider's consent down
	}
	return keyAlert, msgSignInFailed
}

func (w *Web) callbackURL() string { return w.opts.PublicURL + "/oauth/callback" }

func opaqueToken() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// oauthLink is a sign-in button for an OAuth provider.
type oauthLink struct{ ID, Label string }

func (w *Web) oauthLinks() []oauthLink {
	var links []oauthLink
	for _, id := range w.opts.OAuthProviders {
		links = append(links, oauthLink{ID: id, Label: oauthLabel(id)})
	}
	return links
}

// oauthNames are the providers' own spellings of their names, where capitalising the
// identity service's id would misspell them ("Github", "Linkedin_oidc").
var oauthNames = map[string]string{
	"github": "GitHub", "gitlab": "GitLab", "linkedin_oidc": "LinkedIn", "linkedin": "LinkedIn",
	"workos": "WorkOS", "bitbucket": "Bitbucket", "keycloak": "Keycloak", "azure": "Microsoft",
	"twitter": "X (Twitter)", "x": "X", "kakao": "Kakao", "spotify": "Spotify", "twitch": "Twitch",
	"zoom": "Zoom", "slack_oidc": "Slack", "slack": "Slack", "figma": "Figma", "notion": "Notion",
	"apple": "Apple", "google": "Google", "facebook": "Facebook", "discord": "Discord",
}

// oauthLabel is what the sign-in button calls the provider whose id is id.
func oauthLabel(id string) string {
	if name, ok := oauthNames[id]; ok {
		return name
	}
	if id == "" {
		return id
	}
	return strings.ToUpper(id[:1]) + id[1:]
}
