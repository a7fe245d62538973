package stripe

// Client calls the web billing provider's API (Stripe's) through its official Go SDK: the
// pages of subscriptions a backfill reads, and the checkout and portal sessions users
// start. It waits out the provider's rate limits and passing failures on reads, and never
// lets the API key or a response body into an error.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	stripego "github.com/stripe/stripe-go/v84"
	"github.com/stripe/stripe-go/v84/form"
)

// DefaultBase is the provider's API, WEB_API_BASE's default.
const DefaultBase = "https://api.stripe.com"

// Config says how to reach the API and how patiently.
type Config struct {
	Key  string // WEB_API_KEY: a secret key, or a restricted one (docs/providers.md lists the permissions)
	Base string // WEB_API_BASE; empty is DefaultBase
	// Attempts is how many times a request is tried when the provider is rate limiting
	// (429) or failing for a moment (5xx, 409, a network error); 8 when zero. The waits
	// between tries double from FirstWait (1 s when zero) up to 30 s, with jitter, unless
	// the provider says how long in Retry-After.
	Attempts  int
	FirstWait time.Duration
	// OnWait, when set, is told of every wait before a retry, for a progress display.
	OnWait func(wait time.Duration, why string)
}

// Client calls the provider's API.
type Client struct {
	backend stripego.Backend
	cfg     Config
}

const maxWait = 30 * time.Second

// NewClient builds a Client. The SDK's own retries are off: this client retries, with one policy
// that also covers rate limits, which the SDK does not retry.
func NewClient(cfg Config) *Client {
	if cfg.Base == "" {
		cfg.Base = DefaultBase
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 8
	}
	if cfg.FirstWait <= 0 {
		cfg.FirstWait = time.Second
	}
	backend := stripego.GetBackendWithConfig(stripego.APIBackend, &stripego.BackendConfig{
		URL:               stripego.String(strings.TrimRight(cfg.Base, "/")),
		MaxNetworkRetries: stripego.Int64(0),
		LeveledLogger:     &stripego.LeveledLogger{Level: stripego.LevelNull},
		EnableTelemetry:   stripego.Bool(false),
	})
	return &Client{backend: backend, cfg: cfg}
}

// SubscriptionQuery selects subscriptions, newest first as the provider lists them.
type SubscriptionQuery struct {
	CreatedSince  time.Time // zero: any
	Customer      string    // empty: any
	StartingAfter string    // the last id of the previous page; empty: from the newest
	Limit         int       // per page, 1..100; zero is 100
}

// SubscriptionPage is one page of subscription objects exactly as the API sent them, so
// that they go through the same decoding as webhook payloads in either API shape.
type SubscriptionPage struct {
	Subscriptions []json.RawMessage
	HasMore       bool
	// LastID is the id of the page's last subscription: StartingAfter for the next page.
	LastID string
}

// rawPage receives a list response without decoding its objects into the SDK's types,
// which know only the SDK's own API version.
type rawPage struct {
	stripego.APIResource
	Data    []json.RawMessage `json:"data"`
	HasMore bool              `json:"has_more"`
}

// Subscriptions reads one page: every status (canceled included), with each subscription's
// items and their prices inline, as the list endpoint always returns them.
func (c *Client) Subscriptions(ctx context.Context, q SubscriptionQuery) (SubscriptionPage, error) {
	limit := q.Limit
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	params := &stripego.SubscriptionListParams{Status: stripego.String("all")}
	params.Limit = stripego.Int64(int64(limit))
	if q.StartingAfter != "" {
		params.StartingAfter = stripego.String(q.StartingAfter)
	}
	if q.Customer != "" {
		params.Customer = stripego.String(q.Customer)
	}
	if !q.CreatedSince.IsZero() {
		params.CreatedRange = &stripego.RangeQueryParams{GreaterThanOrEqual: q.CreatedSince.Unix()}
	}
	var page rawPage
	err := c.retrying(ctx, func() error {
		page = rawPage{}
		return c.call(ctx, http.MethodGet, "/v1/subscriptions", params, &page)
	})
	if err != nil {
		return SubscriptionPage{}, err
	}
	out := SubscriptionPage{Subscriptions: page.Data, HasMore: page.HasMore}
	if n := len(page.Data); n > 0 {
		var last struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(page.Data[n-1], &last) != nil || last.ID == "" {
			return SubscriptionPage{}, errors.New("web provider API: a subscription in the list has no id")
		}
		out.LastID = last.ID
	}
	if out.HasMore && out.LastID == "" {
		return SubscriptionPage{}, errors.New("web provider API: an empty page said more follow")
	}
	return out, nil
}

// call sends params form-encoded, as the provider's v1 API takes them (in the query for a
// GET), and decodes the answer into v. The SDK's Call would do the encoding too, but it
// panics on list parameters, which have no Metadata field.
func (c *Client) call(ctx context.Context, method, path string, params stripego.ParamsContainer, v stripego.LastResponseSetter) error {
	common := params.GetParams()
	common.Context = ctx
	body := &form.Values{}
	form.AppendTo(body, params)
	return c.backend.CallRaw(method, path, c.cfg.Key, []byte(body.Encode()), common, v)
}

// retrying runs call until it succeeds, fails for good, runs out of attempts or ctx ends.
func (c *Client) retrying(ctx context.Context, call func() error) error {
	for attempt := 1; ; attempt++ {
		err := call()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		failure := describe(err)
		if !failure.transient || attempt >= c.cfg.Attempts {
			if failure.transient {
				return fmt.Errorf("%w (gave up after %d attempts)", failure, attempt)
			}
			return failure
		}
		wait := failure.retryAfter
		if wait <= 0 {
			wait = backoff(c.cfg.FirstWait, attempt)
		}
		if c.cfg.OnWait != nil {
			c.cfg.OnWait(wait, failure.Error())
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// backoff is the wait before try attempt+1: first doubled attempt-1 times, capped at
// maxWait, less up to half of it at random so that many clients do not retry in step.
func backoff(first time.Duration, attempt int) time.Duration {
	wait := first << min(attempt-1, 16)
	if wait <= 0 || wait > maxWait {
		wait = maxWait
	}
	return wait - rand.N(wait/2+1)
}

// Error is a failed call to the provider's API, described without the key or the body.
type Error struct {
	Status  int    // the HTTP status, or 0 when there was no answer
	Message string // the provider's explanation, with anything key-like redacted
	// transient failures (rate limits, 5xx, 409 lock timeouts, no answer) are retried.
	transient  bool
	retryAfter time.Duration
}

// HTTPStatus is the status the API answered (0: none), as billing.StatusOf reads it.
func (e *Error) HTTPStatus() int { return e.Status }

func (e *Error) Error() string {
	switch {
	case e.Status == http.StatusTooManyRequests:
		return "web provider API: rate limited (429)"
	case e.Status == http.StatusUnauthorized:
		return "web provider API refused WEB_API_KEY (401): " + e.Message
	case e.Status == http.StatusForbidden:
		return "web provider API: WEB_API_KEY may not read subscriptions (403): " + e.Message
	case e.Status != 0:
		return fmt.Sprintf("web provider API: %d: %s", e.Status, e.Message)
	}
	return "web provider API: " + e.Message
}

// keyLike matches the provider's API keys, which its error messages may echo (masked, but
// a masked key is still no business of a log).
var keyLike = regexp.MustCompile(`\b(sk|rk|pk)_(test|live)_[A-Za-z0-9*]+`)

// describe turns what the SDK returned into an Error.
func describe(err error) *Error {
	var apiErr *stripego.Error
	if errors.As(err, &apiErr) {
		e := &Error{Status: apiErr.HTTPStatusCode, Message: keyLike.ReplaceAllString(apiErr.Msg, "[key]")}
		e.transient = e.Status == http.StatusTooManyRequests || e.Status == http.StatusConflict || e.Status >= 500
		if apiErr.LastResponse != nil {
			if secs, err := strconv.Atoi(apiErr.LastResponse.Header.Get("Retry-After")); err == nil && secs > 0 {
				e.retryAfter = min(time.Duration(secs)*time.Second, maxWait)
			}
		}
		return e
	}
	// The SDK's other errors are the transport's, or an answer that was not JSON (a proxy's
	// error page, say), whose text quotes the body: neither is shown, both are retried.
	if strings.HasPrefix(err.Error(), "Couldn't deserialize JSON") {
		return &Error{Message: "an answer that is not JSON", transient: true}
	}
	return &Error{Message: "no answer: " + keyLike.ReplaceAllString(err.Error(), "[key]"), transient: true}
}

// sessionTimeout bounds creating a checkout or portal session: a person is waiting, and
// the SDK's own default is 80 s.
const sessionTimeout = 10 * time.Second

// Checkout is a Checkout Session to create: a subscription to one price, for a user.
type Checkout struct {
	Price  string
	UserID string // client_reference_id and subscription_data.metadata.user_id
	// Customer is the user's web customer when one is linked; else CustomerEmail, if known,
	// prefills the form and the provider makes a customer.
	Customer      string
	CustomerEmail string
	SuccessURL    string
	CancelURL     string
}

// CreateCheckout creates a Checkout Session in subscription mode and returns its URL. The
// subscription it makes carries metadata.user_id, so its webhooks resolve to the user.
// It is tried once: a person is waiting, and the provider's answer says what to do.
func (c *Client) CreateCheckout(ctx context.Context, in Checkout) (string, error) {
	params := &stripego.CheckoutSessionParams{
		Mode:              stripego.String(string(stripego.CheckoutSessionModeSubscription)),
		LineItems:         []*stripego.CheckoutSessionLineItemParams{{Price: stripego.String(in.Price), Quantity: stripego.Int64(1)}},
		ClientReferenceID: stripego.String(in.UserID),
		SubscriptionData:  &stripego.CheckoutSessionSubscriptionDataParams{Metadata: map[string]string{"user_id": in.UserID}},
		SuccessURL:        stripego.String(in.SuccessURL),
		CancelURL:         stripego.String(in.CancelURL),
	}
	if in.Customer != "" {
		params.Customer = stripego.String(in.Customer)
	} else if in.CustomerEmail != "" {
		params.CustomerEmail = stripego.String(in.CustomerEmail)
	}
	return c.createSession(ctx, "/v1/checkout/sessions", params)
}

// CreatePortal creates a customer portal session for a web customer and returns its URL.
func (c *Client) CreatePortal(ctx context.Context, customer, returnURL string) (string, error) {
	return c.createSession(ctx, "/v1/billing_portal/sessions", &stripego.BillingPortalSessionParams{
		Customer: stripego.String(customer), ReturnURL: stripego.String(returnURL),
	})
}

func (c *Client) createSession(ctx context.Context, path string, params stripego.ParamsContainer) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, sessionTimeout)
	defer cancel()
	var session struct {
		stripego.APIResource
		URL string `json:"url"`
	}
	if err := c.call(ctx, http.MethodPost, path, params, &session); err != nil {
		if ctx.Err() != nil {
			return "", &Error{Message: "no answer within " + sessionTimeout.String()}
		}
		return "", describe(err)
	}
	if session.URL == "" {
		return "", &Error{Message: "the session has no url"}
	}
	return session.URL, nil
}

// PageOrigins are the origins of the provider's hosted checkout and portal pages, where a
// form that starts one ends up: a page's Content-Security-Policy form-action must allow
// them, since browsers check a form's redirects against it. Stripe's API hosts them on
// two origins of its own; any other base (stripe-mock, a test double) on its own origin.
func PageOrigins(base string) []string {
	base = strings.TrimRight(base, "/")
	if base == "" || base == DefaultBase {
		return []string{"https://checkout.stripe.com", "https://billing.stripe.com"}
	}
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		return []string{u.Scheme + "://" + u.Host}
	}
	return nil
}
