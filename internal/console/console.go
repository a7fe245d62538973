// Package console is the operator console at /admin: one customer across every store at a
// glance, the events and deliveries that need a hand, and the plans as synced. It reads
// through the billing reader and the pipeline's records of each event, and acts (replay,
// retry) through the same calls as the command line, naming the operator in an audit line.
//
// Only operators enter: users signed in through the forms whose confirmed e-mail is in
// ADMIN_EMAILS. Anyone else is told there is nothing here.
package console

import (
	"bytes"
	"context"
	"embed"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing/grants"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/identity"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options wires the console to its collaborators.
type Options struct {
	DB *db.DB
	// Operators are the e-mail addresses let in, lower-cased.
	Operators []string
	// CurrentUser is the request's signed-in user as the identity service reports it
	// (nil: nobody); NotFound the site's own 404 page, which outsiders get.
	CurrentUser func(ctx context.Context) (*identity.User, error)
	NotFound    http.HandlerFunc
	// Billing answers a customer's billing view; Pipeline replays events; Grants makes
	// and revokes grants.
	Billing  *reader.Reader
	Pipeline *pipeline.Pipeline
	Grants   *grants.Grants
	// Stores are the stores the binary knows, in the order the charts show them; a
	// store's Dashboard, when set, links a subscription to its page in the store's own
	// dashboard ("" when an id reaches none).
	Stores    []string
	Dashboard func(provider, subscriptionID string) string
	// TypeNote is shown beside an event type: the number a store gives it, where it
	// numbers its types (Google Play's notificationType); "" for none.
	TypeNote func(provider, eventType string) string
	// Wake tells the outbound deliverer that a delivery was queued again; nil when
	// outbound webhooks are off.
	Wake func()
	// AppName and LogoURL brand the pages as the forms are; DevIdentity says the
	// development identity service signs operators in.
	AppName, LogoURL string
	DevIdentity      bool
	Log              *slog.Logger
	Clock            func() time.Time
}

// Console is the operator console.
type Console struct {
	opts  Options
	pages map[string]*template.Template
	daily dailyQueries
	kept  keptStanding
}

// New parses the console's templates.
func New(opts Options) (*Console, error) {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Dashboard == nil {
		opts.Dashboard = func(string, string) string { return "" }
	}
	if opts.TypeNote == nil {
		opts.TypeNote = func(string, string) string { return "" }
	}
	c := &Console{opts: opts, pages: map[string]*template.Template{}, daily: parseDaily(opts.DB.Engine), kept: keptStanding{slowAfter: slowStanding, bigFrom: bigStanding}}
	for _, name := range []string{"overview", "customers", "customer", "events", "event", "deliveries", "plans", "audit", "message"} {
		t, err := template.New(name).Funcs(funcs).Funcs(template.FuncMap{"typeNote": opts.TypeNote}).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, err
		}
		c.pages[name] = t
	}
	return c, nil
}

func (c *Console) now() time.Time { return c.opts.Clock().UTC() }

// isOperator says whether u may enter: an address in the list that the identity service
// says its owner confirmed, so that signing up first with an operator's address is not
// enough.
func (c *Console) isOperator(u *identity.User) bool {
	return u != nil && u.Email != "" && u.EmailConfirmedAt != nil &&
		slices.Contains(c.opts.Operators, strings.ToLower(u.Email))
}

// page is what every template gets.
type page struct {
	AppName, LogoURL string
	DevIdentity      bool
	Title, Section   string
	Operator         string
	Notice, Alert    string
	Data             any
}

// notices are what an action's redirect may say, by the code in its ?done=.
var notices = map[string]string{
	"replayed":      "The event was replayed.",
	"retried":       "The delivery is queued to be sent again.",
	"not-retryable": "That delivery was already delivered, or is gone.",
	"granted":       "The plan is granted.",
	"revoked":       "The grant is revoked.",
}

// render writes a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	p.AppName, p.LogoURL, p.DevIdentity = c.opts.AppName, c.opts.LogoURL, c.opts.DevIdentity
	if op := operatorOf(r.Context()); op != nil {
		p.Operator = op.Email
	}
	if p.Notice == "" {
		p.Notice = notices[r.URL.Query().Get("done")] // a fixed message, never the URL's text
	}
	var buf bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		c.opts.Log.ErrorContext(r.Context(), "console page failed", "page", name, "error", err)
		http.Error(w, "Something went wrong on our side.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
