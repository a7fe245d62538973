// Package stores is the list of the stores tollgate hears, one file per store: each is one
// value saying what the store is, whether the configuration turns it on, its adapter as
// the configuration sets it up, and what else it can do — each of those optional. The
// binary learns every store from this list (All): the webhook routes, the commands, the
// console, the start-up line and the API's enums read it, so a new store is a new package
// and one entry here (docs/billing.md, "Adding a store").
package stores

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/db"
)

// Store is one store as the binary knows it. Name, Display, On and Open are required;
// every other field is a capability, nil (or false) when the store has none.
type Store struct {
	// Name is the provider's name: its webhook route's last segment, the key of its rows.
	Name string
	// Display is its name for people: the console, the docs.
	Display string
	// InApp: it sells in the mobile app. A plan it sold is changed in the app's store, so
	// the web offers nothing beside it.
	InApp bool
	// Claims: apps report its purchases to POST /api/v1/billing/purchases.
	Claims bool
	// On says whether the configuration turns it on.
	On func(config.Config) bool
	// Open is the store as the configuration sets it up: its adapter, and its API.
	Open func(config.Config) (Opened, error)
	// Prices, when set, says which of a plan's web_prices are this web store's own (a plan
	// lists every web store's); nil: every price no other store of the list says is its.
	Prices func(id string) bool
	// Note, when set, is what the start-up line adds to its name ("development stand-in").
	Note func(config.Config) string
	// Dashboard, when set, is the page of a subscription in the store's own dashboard, or
	// "" when an id reaches none.
	Dashboard func(subscriptionID string) string
	// TestEvents are its part in "tollgate webhook send".
	TestEvents *TestEvents
	// API says which settings let tollgate read the store's API (reconcile, catch-up).
	API *API
	// TypeNote, when set, is what to show beside one of its event types: the number the
	// store gives the type, where it names events by number ("" for none).
	TypeNote func(eventType string) string
	// StandIn is the development stand-in for the store's API, when the configuration
	// asks for one (nil, nil when it does not), starting from what kept holds.
	StandIn func(cfg config.Config, kept Kept) (*StandIn, error)
	// SyncEngine reads the store's subscriptions from its own sync engine's mirror in the
	// database (WEB_INGESTION=sync_engine) instead of from its webhooks.
	SyncEngine *SyncEngine
}

// Opened is a store as the configuration sets it up.
type Opened struct {
	Adapter billing.Adapter
	// Unrouted: its events are not received, only replayed (the sync engine writes its
	// subscriptions instead): it has no webhook route.
	Unrouted bool
	// Reading reads the store's API; nil unless the settings API names are set. onWait,
	// when set, hears of each wait for the API's rate limit.
	Reading func(onWait func(time.Duration, string)) (Reading, error)
	// Checkout starts purchases and opens the portal: a web store's, with its API key.
	Checkout billing.WebStore
}

// API is the settings reading a store's API needs.
type API struct {
	// On says whether they are set; Needs is what a command that needs them says when
	// they are not.
	On    func(config.Config) bool
	Needs string
	// Lists: the API lists every subscription of the account (Reading.List), so that a
	// backfill can read them all; else it reads one subscription tollgate knows at a time.
	Lists bool
	// OnlyNamed, when set and true, leaves the store out of a reconcile pass of every
	// store: it is read only when named (a stand-in that lives inside serve).
	OnlyNamed func(config.Config) bool
	// Off, when set, is said at start-up when the store is on and its API is not.
	Off string
}

// Reading is how a store's API is read.
type Reading struct {
	// List reads every subscription of the account, page by page, that q selects: a
	// backfill, and a reconcile pass. Nil for a store whose API cannot list them.
	List func(q ListQuery) pipeline.PageReader
	// Read reads one subscription tollgate knows (paced by the store): a pass reads
	// each. Nil when List is set.
	Read reconcile.StoreReader
	// Histories are the store's records of what it sent (Provider set), caught up on
	// before each pass; Noun names their items.
	Histories []reconcile.HistoryOptions
	Noun      string
}

// ListQuery narrows a listing: subscriptions created since CreatedSince, of Customer.
type ListQuery struct {
	CreatedSince time.Time
	Customer     string
}

// Scope names what q selects, so that an interrupted backfill resumes only the same one.
func (q ListQuery) Scope() string {
	var parts []string
	if !q.CreatedSince.IsZero() {
		parts = append(parts, "since="+q.CreatedSince.UTC().Format(time.RFC3339))
	}
	if q.Customer != "" {
		parts = append(parts, "customer="+q.Customer)
	}
	return strings.Join(parts, " ")
}

// Kept is where a development stand-in keeps what it was told, so that a serve restarted
// in development still knows it (serve keeps it in its database): Saved is what it held
// last, Save is given what it holds after each change.
type Kept struct {
	Saved []byte
	Save  func(state []byte)
}

// StandIn is a development stand-in for a store's API, served on loopback only.
type StandIn struct {
	Path    string
	Handler http.Handler
	// Warn is said at start-up: the stand-in is on, and how to hear the real store.
	Warn string
}

// SyncEngine is a store's sync engine's mirror: checked and indexed by the commands that
// open the database, and read by the pipeline and the reader.
type SyncEngine struct {
	Check         func(ctx context.Context, d *db.DB, schema string) error
	EnsureIndexes func(ctx context.Context, d *db.DB, schema string) error
	New           func(d *db.DB, schema string, log *slog.Logger) plans.Mirror
}

// List is a list of stores, in the order they are shown everywhere.
type List []Store

// All are the stores tollgate can hear.
func All() List { return List{web, mobile, appStore, playStore, paddleStore} }

// Names are every store's name, for the flags that take one.
func (l List) Names() []string { return l.NamesWhere(func(Store) bool { return true }) }

// NamesWhere are the names of the stores keep says yes to, in the list's order.
func (l List) NamesWhere(keep func(Store) bool) []string {
	var names []string
	for _, s := range l {
		if keep(s) {
			names = append(names, s.Name)
		}
	}
	return names
}

// ByName is the store named name.
func (l List) ByName(name string) (Store, bool) {
	for _, s := range l {
		if s.Name == name {
			return s, true
		}
	}
	return Store{}, false
}

// SoldInApp says whether the store named provider sells in the app.
func (l List) SoldInApp(provider string) bool {
	s, ok := l.ByName(provider)
	return ok && s.InApp
}

// SoldOnWeb are the names of the stores that sell on the web (not in the app).
func (l List) SoldOnWeb() []string { return l.NamesWhere(func(s Store) bool { return !s.InApp }) }

// Claiming are the names of the stores whose purchases apps report.
func (l List) Claiming() []string { return l.NamesWhere(func(s Store) bool { return s.Claims }) }

// Dashboard is the page of a subscription in its store's dashboard, or "".
func (l List) Dashboard(provider, subscriptionID string) string {
	if s, ok := l.ByName(provider); ok && s.Dashboard != nil {
		return s.Dashboard(subscriptionID)
	}
	return ""
}

// TypeNote is what to show beside provider's event type: its number in the store, where
// the store numbers its types ("" otherwise).
func (l List) TypeNote(provider, eventType string) string {
	if s, ok := l.ByName(provider); ok && s.TypeNote != nil {
		return s.TypeNote(eventType)
	}
	return ""
}

// ShapeOf says which store's event a JSON body looks like, or "" when it cannot tell.
func (l List) ShapeOf(body []byte) string {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return ""
	}
	for _, s := range l {
		if s.TestEvents != nil && s.TestEvents.LooksLike(top) {
			return s.Name
		}
	}
	return ""
}

// OpenStore is a store on, as the configuration set it up.
type OpenStore struct {
	Store
	Opened
}

// Open sets up the stores cfg turns on.
func (l List) Open(cfg config.Config) ([]OpenStore, error) {
	var list []OpenStore
	for _, s := range l {
		if !s.On(cfg) {
			continue
		}
		opened, err := s.Open(cfg)
		if err != nil {
			return nil, err
		}
		if opened.Checkout != nil {
			opened.Checkout = ownPrices{opened.Checkout, l.pricesOf(s)}
		}
		list = append(list, OpenStore{s, opened})
	}
	return list, nil
}

// pricesOf says which prices are s's own: those its Prices says, else those no other store
// of the list claims.
func (l List) pricesOf(s Store) func(string) bool {
	if s.Prices != nil {
		return s.Prices
	}
	return func(id string) bool {
		for _, other := range l {
			if other.Name != s.Name && other.Prices != nil && other.Prices(id) {
				return false
			}
		}
		return true
	}
}

// ownPrices is a web store's checkout selling its own prices only.
type ownPrices struct {
	billing.WebStore
	owns func(string) bool
}

func (o ownPrices) OwnsPrice(id string) bool { return o.owns(id) }

func always(config.Config) bool { return true }
