// Package checkout starts web purchases and opens the web provider's customer portal,
// and says what the account page offers a user: the surfaces' way into the provider's
// API, bounded by what the user already has.
package checkout

import (
	"cmp"
	"context"
	"database/sql"
	"errors"

	"log/slog"
	"net/url"
	"slices"
	"strings"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Options configures a Checkout.
type Options struct {
	// Stores are the web stores whose API keys are set, which let users start web
	// purchases and open their portals; Known names every web store the binary knows, set
	// up or not. PublicURL and RedirectOrigins bound where buyers return to.
	Stores          []billing.WebStore
	Known           []string
	PublicURL       string
	RedirectOrigins []string
	// SoldInApp says whether a provider sells in the app: a user it sold a plan to
	// changes it there, and is offered nothing on the web.
	SoldInApp func(provider string) bool
	// Applier applies what Sync reads back from the provider.
	Applier Applier
}

// Checkout is the web provider's checkout and portal for signed-in users.
type Checkout struct {
	db        *db.DB
	log       *slog.Logger
	reader    *reader.Reader
	stores    []billing.WebStore
	known     []string
	soldInApp func(provider string) bool
	applier   Applier
	publicURL string
	// redirectOrigins are the scheme://host[:port] a checkout may return to.
	redirectOrigins []string
}

// New builds a Checkout.
func New(d *db.DB, log *slog.Logger, r *reader.Reader, opts Options) *Checkout {
	s := &Checkout{db: d, log: log, reader: r, stores: opts.Stores, known: opts.Known, soldInApp: opts.SoldInApp, applier: opts.Applier,
		publicURL: strings.TrimRight(opts.PublicURL, "/")}
	if s.soldInApp == nil {
		s.soldInApp = func(string) bool { return false }
	}
	if u, err := url.Parse(s.publicURL); err == nil && u.Host != "" {
		s.redirectOrigins = append(s.redirectOrigins, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	for _, origin := range opts.RedirectOrigins {
		s.redirectOrigins = append(s.redirectOrigins, strings.ToLower(strings.TrimRight(origin, "/")))
	}
	return s
}

// Buyer is the user starting a purchase, as the token or session names them.
type Buyer struct {
	UserID string
	Email  string
}

// Request is what to buy, and where. Provider names the web store (default: the web
// provider's when its key is set, else the only web store set up). Price, when given, must
// be one of the plan's web prices that store sells (default: its first); empty URLs default to PUBLIC_URL/?checkout=success|cancel, or for
// success to PUBLIC_URL + SuccessPath when that is set (the forms' return page).
type Request struct {
	Provider    string
	Plan        string
	Price       string
	SuccessURL  string
	SuccessPath string
	CancelURL   string
}

// Start starts a web purchase of a plan: a Checkout Session for the plan's price whose
// subscription carries metadata.user_id, so that its webhooks resolve to the buyer with no
// further step. It returns the session's URL, to send the buyer to.
func (s *Checkout) Start(ctx context.Context, buyer Buyer, req Request) (string, error) {
	store, err := s.storeFor(req.Provider)
	if err != nil {
		return "", err
	}
	success, err := s.redirectURL(req.SuccessURL, cmp.Or(req.SuccessPath, "/?checkout=success"))
	if err != nil {
		return "", err
	}
	cancel, err := s.redirectURL(req.CancelURL, "/?checkout=cancel")
	if err != nil {
		return "", err
	}
	var prices []dbq.PlanWebPricesRow
	var position billing.Entitlements
	var customer string
	err = s.db.Request(ctx, func(ctx context.Context) error {
		q := dbq.New(s.db)
		var err error
		if prices, err = q.PlanWebPrices(ctx, req.Plan); err != nil {
			return err
		}
		if position, err = s.reader.Read(ctx, q, buyer.UserID); err != nil {
			return err
		}
		customer, err = customerOf(ctx, q, store.Provider(), buyer.UserID)
		return err
	}, nil)
	if err != nil {
		return "", err
	}
	price, err := pickPrice(prices, req.Price, store.OwnsPrice)
	if err != nil {
		return "", err
	}
	if position.ManagedInApp(s.soldInApp) {
		return "", billing.ErrManagedInApp
	}
	for _, sub := range position.Subscriptions {
		// A grant ends by itself: buying its plan is how a user keeps it.
		if sub.Plan.Key == req.Plan && sub.Entitling(position.At) && sub.Provider != billing.ProviderGrant {
			return "", billing.ErrAlreadySubscribed
		}
	}
	sessionURL, err := store.CreateCheckout(ctx, billing.Purchase{
		Price: price, UserID: buyer.UserID, Customer: customer, CustomerEmail: buyer.Email, SuccessURL: success, CancelURL: cancel,
	})
	return sessionURL, s.providerFailure(ctx, "checkout", err)
}

// Portal opens a web store's customer portal (the one provider names, chosen as Start
// chooses) for the user's customer there, returning to PUBLIC_URL/ where the store lets it.
func (s *Checkout) Portal(ctx context.Context, userID, provider string) (string, error) {
	store, err := s.storeFor(provider)
	if err != nil {
		return "", err
	}
	var customer string
	var position billing.Entitlements
	err = s.db.Request(ctx, func(ctx context.Context) error {
		var err error
		q := dbq.New(s.db)
		if customer, err = customerOf(ctx, q, store.Provider(), userID); err != nil || customer != "" {
			return err
		}
		position, err = s.reader.Read(ctx, q, userID)
		return err
	}, nil)
	switch {
	case err != nil:
		return "", err
	case customer == "" && position.ManagedInApp(s.soldInApp):
		return "", billing.ErrManagedInApp
	case customer == "":
		return "", billing.ErrNoWebCustomer
	}
	sessionURL, err := store.CreatePortal(ctx, customer, s.publicURL+"/")
	return sessionURL, s.providerFailure(ctx, "portal", err)
}

// WebOffers is what the account page offers a user on the web: the plans above theirs
// that have web prices, whether they have a web customer whose billing they can manage,
// and, instead of both, whether their subscription is managed in the mobile app.
type WebOffers struct {
	Upgrades     []billing.Plan
	Manage       bool
	ManagedInApp bool
}

// Offers lists the user's web offers. Without WEB_API_KEY there are none.
func (s *Checkout) Offers(ctx context.Context, userID string) (WebOffers, error) {
	var offers WebOffers
	store, err := s.storeFor("")
	if err != nil {
		return offers, nil // no web store is set up: nothing to offer
	}
	err = s.db.Request(ctx, func(ctx context.Context) error {
		q := dbq.New(s.db)
		position, err := s.reader.Read(ctx, q, userID)
		if err != nil {
			return err
		}
		plans, err := q.PlansSoldOnWeb(ctx)
		if err != nil {
			return err
		}
		current := paidTier(position)
		// A subscription bought in the app is changed there: nothing to buy beside it.
		offers.ManagedInApp = position.ManagedInApp(s.soldInApp)
		for _, p := range plans {
			if p.Tier > current && !offers.ManagedInApp {
				offers.Upgrades = append(offers.Upgrades, billing.Plan{Key: p.Key, Name: p.Name, ID: p.ID, Tier: p.Tier})
			}
		}
		customer, err := customerOf(ctx, q, store.Provider(), userID)
		offers.Manage = customer != ""
		return err
	}, nil)
	return offers, err
}

// paidTier is the tier of the best plan a store sold the user that entitles now (-1: none).
// A grant's plan is offered still: it ends by itself, and buying it is how it is kept.
func paidTier(position billing.Entitlements) int32 {
	tier := int32(-1)
	for _, sub := range position.Subscriptions {
		if sub.Provider != billing.ProviderGrant && sub.Entitling(position.At) {
			tier = max(tier, sub.Plan.Tier)
		}
	}
	return tier
}

// pickPrice is want, when it is one of the plan's web prices that the store owns, or
// else the first of those.
func pickPrice(prices []dbq.PlanWebPricesRow, want string, owns func(string) bool) (string, error) {
	if len(prices) == 0 {
		return "", billing.ErrUnknownPlan
	}
	var own []string
	for _, p := range prices {
		if p.PriceID.Valid && owns(p.PriceID.String) {
			own = append(own, p.PriceID.String)
		}
	}
	switch {
	case len(own) == 0:
		return "", billing.ErrPlanNotOnWeb
	case want == "":
		return own[0], nil
	case !slices.Contains(own, want):
		return "", billing.ErrForeignPrice
	}
	return want, nil
}

// redirectURL is raw when it is an absolute http(s) URL on PUBLIC_URL's origin or one of
// CHECKOUT_REDIRECT_ORIGINS, and PUBLIC_URL + path when raw is empty. Anything else could
// send a buyer from the provider's page to a stranger's.
func (s *Checkout) redirectURL(raw, path string) (string, error) {
	if raw == "" {
		return s.publicURL + path, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return "", billing.ErrRedirectOrigin
	}
	if !slices.Contains(s.redirectOrigins, strings.ToLower(u.Scheme+"://"+u.Host)) {
		return "", billing.ErrRedirectOrigin
	}
	return raw, nil
}

// providerFailure turns a failed session call into a ProviderError, logging its status
// and nothing of the provider's message.
func (s *Checkout) providerFailure(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	status := billing.StatusOf(err)
	s.log.WarnContext(ctx, "web provider refused a session", "session", what, "status", status)
	return &billing.ProviderError{Status: status}
}

// storeFor is the web store a purchase or the portal goes to: the one named, else the web
// provider's when its key is set, else the first set up. A store the binary knows but
// that is not set up is ErrCheckoutUnavailable; a name it does not know, ErrUnknownStore.
func (s *Checkout) storeFor(name string) (billing.WebStore, error) {
	for _, store := range s.stores {
		if store.Provider() == cmp.Or(name, billing.ProviderWeb) {
			return store, nil
		}
	}
	switch {
	case name == "" && len(s.stores) > 0:
		return s.stores[0], nil
	case name == "" || slices.Contains(s.known, name):
		return nil, billing.ErrCheckoutUnavailable
	}
	return nil, billing.ErrUnknownStore
}

// customerOf is the user's customer at the web store provider: the web provider's
// customer linked to the user, or another store's from the user's subscriptions there;
// "" when none is.
func customerOf(ctx context.Context, q *dbq.Queries, provider, userID string) (string, error) {
	if provider == billing.ProviderWeb {
		return webCustomerOf(ctx, q, userID)
	}
	customer, err := q.ProviderCustomerOfUser(ctx, dbq.ProviderCustomerOfUserParams{UserID: userID, Provider: provider})
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return customer.String, err
}

// webCustomerOf is the web customer id linked to the user, or "".
func webCustomerOf(ctx context.Context, q *dbq.Queries, userID string) (string, error) {
	customers, err := q.UserCustomers(ctx, userID)
	if err != nil {
		return "", err
	}
	for _, c := range customers {
		if c.WebCustomerID.Valid {
			return c.WebCustomerID.String, nil
		}
	}
	return "", nil
}
