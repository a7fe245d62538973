package billing

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Billing's errors are of a few kinds; each surface (api, forms, webhooks) maps them to
// its answers in one place.

// Answers to a user's question or purchase: not failures.
var (
	// ErrNotEntitled: the user's plan has no limit of that name.
	ErrNotEntitled = errors.New("not entitled")
	// ErrLimitExceeded: the amount would take the counter past the limit; nothing changed.
	ErrLimitExceeded = errors.New("limit exceeded")
	// ErrInvalidAmount: amounts are whole numbers above zero.
	ErrInvalidAmount = errors.New("amount must be at least 1")

	ErrCheckoutUnavailable = errors.New("checkout is not configured (WEB_API_KEY)")
	ErrUnknownPlan         = errors.New("no such plan")
	ErrPlanNotOnWeb        = errors.New("the plan has no web prices")
	ErrForeignPrice        = errors.New("the price is not one of the plan's web prices")
	ErrRedirectOrigin      = errors.New("a redirect URL is not on an allowed origin")
	ErrAlreadySubscribed   = errors.New("already subscribed to this plan")
	ErrNoWebCustomer       = errors.New("no web customer is linked to the user")
	// ErrCheckoutOfAnother: a checkout session that is not the caller's (or no session).
	ErrCheckoutOfAnother = errors.New("the checkout session belongs to another user")
	// ErrManagedInApp: only a subscription bought in the mobile app entitles the user. It
	// is changed or cancelled in the app's store, and a web purchase beside it would bill
	// them twice: checkout and the portal both answer with ManagedInAppMessage.
	ErrManagedInApp = errors.New("the subscription is managed in the mobile app's store")

	// A purchase the app reports (POST /api/v1/billing/purchases).
	ErrUnknownStore       = errors.New("this store is not configured")
	ErrUnverifiedPurchase = errors.New("the purchase could not be verified with the store")
	ErrPurchaseOfAnother  = errors.New("the purchase belongs to another user")
)

// ManagedInAppMessage is the one answer, on the API and the account page, to a user whom
// only a subscription bought in the mobile app entitles (ErrManagedInApp).
const ManagedInAppMessage = "Your subscription was bought in the mobile app: change or cancel it in the app's store " +
	"(the App Store or Google Play settings), not here."

// IsAnswer says whether err is the domain's answer rather than a failure: nothing to
// retry and nothing wrong with the database.
func IsAnswer(err error) bool {
	var unresolved *Unresolved
	var invalid *Invalid
	return errors.Is(err, ErrNotEntitled) || errors.Is(err, ErrLimitExceeded) || errors.Is(err, ErrInvalidAmount) ||
		errors.Is(err, ErrPurchaseOfAnother) || errors.As(err, &unresolved) || errors.As(err, &invalid)
}

// ProviderError is a provider's API refusing or failing to create a session. Its text is
// ours: the provider's message stays out of answers and logs.
type ProviderError struct{ Status int }

func (e *ProviderError) Error() string { return "the web provider could not create the session" }

// Invalid is an event that can never be processed as sent (a missing or malformed field).
// It is stored with the message and answered 200; a replay runs it again once the cause
// is fixed.
type Invalid struct{ Msg string }

func (e *Invalid) Error() string { return e.Msg }

// Invalidf builds an *Invalid.
func Invalidf(format string, args ...any) error {
	return &Invalid{Msg: fmt.Sprintf(format, args...)}
}

// Unresolved is an event that names a customer or a price tollgate cannot map to a user
// or a plan (yet). It changes nothing, is logged at info with the ids, and is completed by
// a replay once the plan or the customer link exists.
type Unresolved struct {
	What string
	IDs  []any // key, value pairs
}

func (e *Unresolved) Error() string {
	var b strings.Builder
	b.WriteString(e.What)
	for i := 0; i+1 < len(e.IDs); i += 2 {
		fmt.Fprintf(&b, " %v=%v", e.IDs[i], e.IDs[i+1])
	}
	return b.String()
}

// NewUnresolved builds an *Unresolved.
func NewUnresolved(what string, ids ...any) error { return &Unresolved{What: what, IDs: ids} }

// BodyError is a verified body that is not an event (400): Outcome labels it in logs and
// metrics; its message is safe to show.
type BodyError struct {
	Outcome string
	Err     error
}

func (e *BodyError) Error() string { return e.Err.Error() }
func (e *BodyError) Unwrap() error { return e.Err }

// BadJSON and BadEventID are the two kinds of BodyError.
func BadJSON(err error) error    { return &BodyError{Outcome: "bad_json", Err: err} }
func BadEventID(err error) error { return &BodyError{Outcome: "bad_event_id", Err: err} }

// JSONProblem describes a decoding error without quoting the input.
func JSONProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fmt.Sprintf("field %q has the wrong type", typeErr.Field)
	}
	return "malformed JSON"
}

// Refusals of a request's verification, for the log (the answer is always 401).
var (
	ErrNoSecret          = errors.New("no signing secret configured")
	ErrSignatureMismatch = errors.New("no signature matches")
	ErrMissingHeader     = errors.New("no signature or authorization header")
	ErrAmbiguousHeader   = errors.New("more than one signature or authorization header")
)
