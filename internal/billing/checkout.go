package billing

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"

	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/webprovider"
)

// Checkout and portal refusals; the API and the forms map each to one answer.
var (
	ErrCheckoutUnavailable = errors.New("checkout is not configured (WEB_API_KEY)")
	ErrUnknownPlan         = errors.New("no such plan")
	ErrPlanNotOnWeb        = errors.New("the plan has no web prices")
	ErrForeignPrice        = errors.New("the price is not one of the plan's web prices")
	ErrRedirectOrigin      = errors.New("a redirect URL is not on an allowed origin")
	ErrAlreadySubscribed   = errors.New("already subscribed to this plan")
	ErrNoWebCustomer       = errors.New("no web customer is linked to the user")
	// ErrManagedInApp: only a subscription bought in the mobile app entitles the user. It
	// is changed or cancelled in the app's store, and a web purchase beside it would bill
	// them twice: checkout and the portal both answer with ManagedInAppMessage.
	ErrManagedInApp = errors.New("the subscription is managed in the mobile app's store")
)

// ProviderError is the web provider refusing or failing to create a session. Its text is
// ours: the provider's message stays out of answers and logs.
type ProviderError struct{ Status int }

func (e *ProviderError) Error() string { return "the web provider could not create the session" }

// Buyer is the user starting a purchase, as the token or session names them.
type Buyer struct {
	UserID string
	Email  string
}

// CheckoutRequest is what to buy. Price, when given, must be one of the plan's web prices
// (default: its first); empty URLs default to PUBLIC_URL/?checkout=success|cancel.
type CheckoutRequest struct {
	Plan       string
	Price      string
	SuccessURL string
	CancelURL  string
}

// Checkout starts a web purchase of a plan: a Checkout Session for the plan's price whose
// subscription carries metadata.user_id, so that its webhooks resolve to the buyer with no
// further step. It returns the session's URL, to send the buyer to.
func (s *Service) Checkout(ctx context.Context, buyer Buyer, req CheckoutRequest) (string, error) {
	if s.webAPI == nil {
		return "", ErrCheckoutUnavailable
	}
	success, err := s.redirectURL(req.SuccessURL, "/?checkout=success")
	if err != nil {
		return "", err
	}
	cancel, err := s.redirectURL(req.CancelURL, "/?checkout=cancel")
	if err != nil {
		return "", err
	}
	var prices []dbq.PlanWebPricesRow
	var position Entitlements
	var customer string
	err = s.request(ctx, func(ctx context.Context) error {
		q := dbq.New(s.db)
		var err error
		if prices, err = q.PlanWebPrices(ctx, req.Plan); err != nil {
			return err
		}
		if position, err = s.entitlements(ctx, buyer.UserID); err != nil {
			return err
		}
		customer, err = webCustomerOf(ctx, q, buyer.UserID)
		return err
	})
	if err != nil {
		return "", err
	}
	price, err := pickPrice(prices, req.Price)
	if err != nil {
		return "", err
	}
	if managedInApp(position) {
		return "", ErrManagedInApp
	}
	for _, sub := range position.Subscriptions {
		if sub.Plan.Key == req.Plan && sub.Entitling(position.At) {
			return "", ErrAlreadySubscribed
		}
	}
	sessionURL, err := s.webAPI.CreateCheckout(ctx, webprovider.Checkout{
		Price: price, UserID: buyer.UserID, Customer: customer, CustomerEmail: buyer.Email, SuccessURL: success, CancelURL: cancel,
	})
	return sessionURL, s.providerFailure(ctx, "checkout", err)
}

// Portal opens the web provider's customer portal for the user's linked web customer,
// returning to PUBLIC_URL/.
func (s *Service) Portal(ctx context.Context, userID string) (string, error) {
	if s.webAPI == nil {
		return "", ErrCheckoutUnavailable
	}
	var customer string
	var position Entitlements
	err := s.request(ctx, func(ctx context.Context) error {
		var err error
		if customer, err = webCustomerOf(ctx, dbq.New(s.db), userID); err != nil || customer != "" {
			return err
		}
		position, err = s.entitlements(ctx, userID)
		return err
	})
	switch {
	case err != nil:
		return "", err
	case customer == "" && managedInApp(position):
		return "", ErrManagedInApp
	case customer == "":
		return "", ErrNoWebCustomer
	}
	sessionURL, err := s.webAPI.CreatePortal(ctx, customer, s.publicURL+"/")
	return sessionURL, s.providerFailure(ctx, "portal", err)
}

// ManagedInAppMessage is the one answer, on the API and the account page, to a user whom
// only a subscription bought in the mobile app entitles (ErrManagedInApp).
const ManagedInAppMessage = "Your subscription was bought in the mobile app: change or cancel it in the app's store " +
	"(the App Store or Google Play settings), not here."

// managedInApp: a subscription from the mobile provider entitles the user and none from
// the web does.
func managedInApp(position Entitlements) bool {
	mobile, web := false, false
	for _, sub := range position.Subscriptions {
		if sub.Entitling(position.At) {
			mobile = mobile || sub.Provider == ProviderMobile
			web = web || sub.Provider == ProviderWeb
		}
	}
	return mobile && !web
}

// WebOffers is what the account page offers a user on the web: the plans above theirs
// that have web prices, whether they have a web customer whose billing they can manage,
// and, instead of both, whether their subscription is managed in the mobile app.
type WebOffers struct {
	Upgrades     []Plan
	Manage       bool
	ManagedInApp bool
}

// Offers lists the user's web offers. Without WEB_API_KEY there are none.
func (s *Service) Offers(ctx context.Context, userID string) (WebOffers, error) {
	var offers WebOffers
	if s.webAPI == nil {
		return offers, nil
	}
	err := s.request(ctx, func(ctx context.Context) error {
		position, err := s.entitlements(ctx, userID)
		if err != nil {
			return err
		}
		q := dbq.New(s.db)
		plans, err := q.PlansSoldOnWeb(ctx)
		if err != nil {
			return err
		}
		current := int32(-1)
		if g := position.Governing(); g != nil {
			current = g.Plan.tier
		}
		// A subscription bought in the app is changed there: nothing to buy beside it.
		offers.ManagedInApp = managedInApp(position)
		for _, p := range plans {
			if p.Tier > current && !offers.ManagedInApp {
				offers.Upgrades = append(offers.Upgrades, Plan{Key: p.Key, Name: p.Name, id: p.ID, tier: p.Tier})
			}
		}
		customer, err := webCustomerOf(ctx, q, userID)
		offers.Manage = customer != ""
		return err
	})
	return offers, err
}

func pickPrice(prices []dbq.PlanWebPricesRow, want string) (string, error) {
	if len(prices) == 0 {
		return "", ErrUnknownPlan
	}
	if !prices[0].PriceID.Valid {
		return "", ErrPlanNotOnWeb
	}
	if want == "" {
		return prices[0].PriceID.String, nil
	}
	if !slices.ContainsFunc(prices, func(p dbq.PlanWebPricesRow) bool { return p.PriceID.String == want }) {
		return "", ErrForeignPrice
	}
	return want, nil
}

// redirectURL is raw when it is an absolute http(s) URL on PUBLIC_URL's origin or one of
// CHECKOUT_REDIRECT_ORIGINS, and PUBLIC_URL + path when raw is empty. Anything else could
// send a buyer from the provider's page to a stranger's.
func (s *Service) redirectURL(raw, path string) (string, error) {
	if raw == "" {
		return s.publicURL + path, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return "", ErrRedirectOrigin
	}
	if !slices.Contains(s.redirectOrigins, strings.ToLower(u.Scheme+"://"+u.Host)) {
		return "", ErrRedirectOrigin
	}
	return raw, nil
}

// providerFailure turns a failed session call into a ProviderError, logging its status
// and nothing of the provider's message.
func (s *Service) providerFailure(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	var apiErr *webprovider.Error
	status := 0
	if errors.As(err, &apiErr) {
		status = apiErr.Status
	}
	s.log.WarnContext(ctx, "web provider refused a session", "session", what, "status", status)
	return &ProviderError{Status: status}
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
