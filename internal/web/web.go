// Package web serves the server-rendered forms: sign-in, sign-up, password
// reset, one-time codes and OAuth with PKCE, backed by the identity service, with
// server-side sessions in tollgate's database.
package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/checkout"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/identity"
	"github.com/tollgate/tollgate/internal/knownusers"
	"github.com/tollgate/tollgate/internal/ratelimit"
	"github.com/tollgate/tollgate/internal/route"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options wires the forms to their collaborators.
type Options struct {
	DB       *db.DB
	Identity *identity.Client
	// Billing answers the account page; Checkout, when set, offers and starts web purchases.
	Billing        *reader.Reader
	Checkout       *checkout.Checkout
	Throttles      *ratelimit.Throttles
	PublicURL      string
	OAuthProviders []string
	// SecureCookies: Secure and __Host- on the session cookie (off only in development).
	SecureCookies bool
	// PerIP and PerEmail bound form submissions; zero values take the defaults.
	PerIP, PerEmail ratelimit.Limit
	Brand           Brand
	// CheckoutPages are the origins of the web provider's hosted checkout and portal pages
	// (stripe.PageOrigins), which the account page's forms redirect to; empty when
	// web purchases are off.
	CheckoutPages []string
	// BillingMount is the path segment the billing routes are under (BILLING_MOUNT): the
	// buyer's return from checkout is served there.
	BillingMount string
	// DevIdentity: the forms run against the development identity service, and every page
	// says so.
	DevIdentity bool
	// Users records who signs in, for the console's search by e-mail; nil records nobody.
	Users *knownusers.Recorder
	Log   *slog.Logger
}

// Web is the forms surface.
type Web struct {
	opts      Options
	sessions  *scs.SessionManager
	refresher *refresher
	pages     map[string]*template.Template
	static    fs.FS
}

// Form throttles: generous for people, tight for scripts.
var (
	defaultPerIP    = ratelimit.Limit{Name: "forms/ip", Requests: 30, Window: time.Minute}
	defaultPerEmail = ratelimit.Limit{Name: "forms/email", Requests: 10, Window: 10 * time.Minute}
)

// New parses the templates and prepares the session manager.
func New(opts Options) (*Web, error) {
	if opts.PerIP.Requests == 0 {
		opts.PerIP = defaultPerIP
	}
	if opts.PerEmail.Requests == 0 {
		opts.PerEmail = defaultPerEmail
	}
	if opts.BillingMount == "" {
		opts.BillingMount = "billing"
	}
	opts.Brand = opts.Brand.withDefaults()
	templates, err := opts.Brand.filesOf(templateFS, "templates")
	if err != nil {
		return nil, err
	}
	static, err := opts.Brand.filesOf(staticFS, "static")
	if err != nil {
		return nil, err
	}
	w := &Web{
		opts:      opts,
		sessions:  newSessionManager(opts.DB, opts.SecureCookies),
		refresher: &refresher{client: opts.Identity, calls: map[string]*refreshCall{}},
		pages:     map[string]*template.Template{},
		static:    static,
	}
	w.sessions.ErrorFunc = w.sessionFailed
	for _, page := range []string{"session_new", "registration_new", "passwords_new", "passwords_edit", "otp_new", "otp_verify", "account", "message", "waiting"} {
		t, err := template.New("layout.html").Funcs(template.FuncMap{"email": emailBreaks}).ParseFS(templates, "layout.html", page+".html")
		if err != nil {
			return nil, fmt.Errorf("templates: %w", err)
		}
		w.pages[page] = t
	}
	return w, nil
}

// page is what every template gets.
type page struct {
	Brand         Brand
	DevIdentity   bool
	Title         string
	Alert, Notice string
	Info          string
	Email, Phone  string
	Type          string
	Token         string
	// Refresh, when set, is a meta refresh's content ("2;url=…"): the page checks again.
	Refresh        string
	OAuthProviders []oauthLink
	Account        *accountView
}

type accountView struct {
	Email, Plan, Status, PeriodEnd string
	Entitlements                   []string
	// Upgrades are the higher plans the user can buy on the web; ManageBilling offers the
	// provider's portal to a user with a web customer.
	Upgrades      []billing.Plan
	ManageBilling bool
	// ManagedInApp says where the subscription is managed instead, for a user whom only
	// a subscription bought in the mobile app entitles.
	ManagedInApp string
}

// fill shows the billing view, the same answer /api/v1/me gives, as the page's text.
func (a *accountView) fill(v billing.BillingView) {
	if v.Plan != nil {
		a.Plan = v.Plan.Name
	}
	if v.Status != nil {
		a.Status = *v.Status
	}
	if v.CurrentPeriodEnd != nil {
		a.PeriodEnd = v.CurrentPeriodEnd.Format(time.DateOnly)
	}
	for name, value := range v.Entitlements {
		switch value := value.(type) {
		case bool:
			if value {
				a.Entitlements = append(a.Entitlements, name)
			}
		case int64:
			if u, ok := v.Usage[name]; ok { // metered: this period's use of the limit
				a.Entitlements = append(a.Entitlements, fmt.Sprintf("%s: %d of %d", name, u.Used, u.Limit))
			} else {
				a.Entitlements = append(a.Entitlements, fmt.Sprintf("%s: %d", name, value))
			}
		}
	}
	sort.Strings(a.Entitlements)
}

// render writes a page with status. The one-request messages are taken from the session
// unless the handler set them for this render.
func (w *Web) render(rw http.ResponseWriter, r *http.Request, status int, name string, p page) {
	if p.Alert == "" {
		p.Alert = w.sessions.PopString(r.Context(), keyAlert)
	}
	if p.Notice == "" {
		p.Notice = w.sessions.PopString(r.Context(), keyNotice)
	}
	if p.Info == "" {
		p.Info = w.sessions.PopString(r.Context(), keyInfo)
	}
	w.write(rw, r, status, name, p)
}

// write renders without touching the session, for refusals made before it is loaded.
func (w *Web) write(rw http.ResponseWriter, r *http.Request, status int, name string, p page) {
	p.Brand, p.DevIdentity = w.opts.Brand, w.opts.DevIdentity
	var buf bytes.Buffer
	if err := w.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		w.opts.Log.ErrorContext(r.Context(), "render failed", "page", name, "error", err)
		http.Error(rw, "Something went wrong on our side.", http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	if status == http.StatusServiceUnavailable {
		rw.Header().Set("Retry-After", "5")
	}
	rw.WriteHeader(status)
	rw.Write(buf.Bytes())
}

// redirect answers 303 to a validated local path, with an optional one-request message.
func (w *Web) redirect(rw http.ResponseWriter, r *http.Request, target, key, message string) {
	if message != "" {
		w.sessions.Put(r.Context(), key, message)
	}
	http.Redirect(rw, r, safeRedirect(target), http.StatusSeeOther)
}

// securityHeaders go on every HTML response. Referrer-Policy no-referrer is
// set everywhere because several pages are reached with codes in their URL.
// A logo on another host (BRAND_LOGO_URL) adds its origin to img-src, and the provider's
// checkout pages theirs to form-action: browsers check where a form's redirect leads.
func securityHeaders(imageSource string, checkoutPages []string, next http.Handler) http.Handler {
	images := "'self' data:"
	if imageSource != "" {
		images += " " + imageSource
	}
	formTargets := strings.Join(append([]string{"'self'"}, checkoutPages...), " ")
	policy := "default-src 'self'; script-src 'self'; style-src 'self'; img-src " + images + "; " +
		"form-action " + formTargets + "; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", policy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// methodOverride turns POST forms with _method=PUT or DELETE into those methods (the
// convention of the forms' Rails-style routes). It reads at most 64 KiB of form.
func methodOverride(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
			if err := r.ParseForm(); err != nil {
				http.Error(w, "The form could not be read.", http.StatusBadRequest)
				return
			}
			switch m := strings.ToUpper(r.PostFormValue("_method")); m {
			case http.MethodPut, http.MethodDelete, http.MethodPatch:
				r.Method = m
			}
		}
		next.ServeHTTP(w, r)
	})
}

// emailKey keys the per-address form throttle on the submitted e-mail (or phone).
func emailKey(r *http.Request) (string, bool) {
	if r.Method == http.MethodGet {
		return "", false
	}
	to := strings.ToLower(strings.TrimSpace(r.PostFormValue("email")))
	if to == "" {
		to = strings.TrimSpace(r.PostFormValue("phone"))
	}
	return to, to != ""
}

// postsOnly applies a throttle to state-changing requests only.
func postsOnly(throttle func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		throttled := throttle(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				next.ServeHTTP(w, r)
				return
			}
			throttled.ServeHTTP(w, r)
		})
	}
}

func (w *Web) tooManyRequests(rw http.ResponseWriter, r *http.Request) {
	w.render(rw, r, http.StatusTooManyRequests, "message", page{Title: "Slow down",
		Alert: "Too many attempts. Please wait a minute and try again."})
}

// forbidden answers a state-changing request from another site. The refusal comes before
// the routes, so it tells the access log itself which path was refused (a reset link's
// segment as the pattern's {token}).
func (w *Web) forbidden(rw http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if strings.HasPrefix(path, "/passwords/") {
		path = "/passwords/{token}"
	}
	route.Record(r, "cross-origin refused", path)
	w.write(rw, r, http.StatusForbidden, "message", page{Title: "Request refused",
		Alert: "This form was submitted from another site, so it was refused. Please use the form on this site."})
}

// NotFound is the site's 404 page.
func (w *Web) NotFound(rw http.ResponseWriter, r *http.Request) { w.notFound(rw, r) }

func (w *Web) notFound(rw http.ResponseWriter, r *http.Request) {
	w.render(rw, r, http.StatusNotFound, "message", page{Title: "Not found", Alert: "There is nothing at this address."})
}

// staticFiles serves the stylesheet and script embedded in the binary.
func (w *Web) staticFiles() http.Handler {
	return http.StripPrefix("/static/", http.FileServerFS(w.static))
}

// LookupUser is the forms' user lookup: with an explicit token, that token's user; else the
// current session's, refreshing it first when it is about to expire; with neither, nil.
// A rejection by the identity service comes back as an *identity.Error.
func (w *Web) LookupUser(ctx context.Context, token string) (*identity.User, error) {
	if token == "" {
		var err error
		if token, err = w.sessionAccessToken(ctx); err != nil || token == "" {
			return nil, err
		}
	}
	u, err := w.opts.Identity.GetUser(ctx, token)
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// CurrentUser is the signed-in user of a request behind Wrap, as the identity service
// reports it now, or nil when nobody is signed in.
func (w *Web) CurrentUser(ctx context.Context) (*identity.User, error) {
	return w.LookupUser(ctx, "")
}

// sessionAccessToken is the session's access token, refreshed (single-flight) when it
// expires within refreshWindow. It returns "" when the session has none.
func (w *Web) sessionAccessToken(ctx context.Context) (string, error) {
	access := w.sessions.GetString(ctx, keyAccessToken)
	if access == "" {
		return "", nil
	}
	expiresAt := time.Unix(w.sessions.GetInt64(ctx, keyExpiresAt), 0)
	if time.Until(expiresAt) > refreshWindow {
		return access, nil
	}
	s, err := w.refresher.refresh(ctx, w.sessions.GetString(ctx, keyRefreshToken))
	if err != nil {
		return "", err
	}
	w.storeTokens(ctx, s)
	return s.AccessToken, nil
}

// signIn starts a signed-in session: a new session id (no fixation), then the tokens.
func (w *Web) signIn(ctx context.Context, s identity.Session) error {
	if err := w.sessions.RenewToken(ctx); err != nil {
		return err
	}
	w.storeTokens(ctx, s)
	w.opts.Users.SignedIn(s.User.ID, s.User.Email)
	return nil
}

func (w *Web) storeTokens(ctx context.Context, s identity.Session) {
	w.sessions.Put(ctx, keyAccessToken, s.AccessToken)
	w.sessions.Put(ctx, keyRefreshToken, s.RefreshToken)
	w.sessions.Put(ctx, keyExpiresAt, s.ExpiresAt)
}

// isUnavailable reports whether err means the identity service could not answer.
func isUnavailable(err error) bool {
	return errors.Is(err, identity.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}
