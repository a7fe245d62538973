package billing

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Billing's answers that are not failures, each of a kind (kinds.go). The API shows Code,
// Title and Detail as they are; the other surfaces word them by kind.
var (
	// ErrNotEntitled: the user's plan has no limit of that name.
	ErrNotEntitled = newError(KindRefused, "not entitled", "not-entitled", "Not entitled", "The current plan does not include this.")
	// ErrLimitExceeded: the amount would take the counter past the limit; nothing changed.
	ErrLimitExceeded = newError(KindRefused, "limit exceeded", "limit-exceeded", "Limit exceeded",
		"This would exceed the plan's limit for this period; nothing was recorded.")
	// ErrInvalidAmount: amounts are whole numbers above zero.
	ErrInvalidAmount = newError(KindInvalid, "amount must be at least 1", "invalid-amount", "Invalid amount", "The amount must be a whole number of at least 1.")

	ErrCheckoutUnavailable = newError(KindUnconfigured, "checkout is not configured (WEB_API_KEY)", "checkout-unavailable", "Checkout unavailable",
		"Web purchases are not configured on this server.")
	ErrUnknownPlan    = newError(KindInvalid, "no such plan", "invalid-checkout", "Unknown plan", "There is no such plan.")
	ErrPlanNotOnWeb   = newError(KindInvalid, "the plan has no web prices", "invalid-checkout", "Not sold on the web", "This plan has no web prices to buy.")
	ErrForeignPrice   = newError(KindInvalid, "the price is not one of the plan's web prices", "invalid-checkout", "Price not in plan", "The price is not one of the plan's web prices.")
	ErrRedirectOrigin = newError(KindInvalid, "a redirect URL is not on an allowed origin", "invalid-checkout", "Redirect not allowed",
		"success_url and cancel_url must be absolute URLs on this service's origin or one of CHECKOUT_REDIRECT_ORIGINS.")
	ErrAlreadySubscribed = newError(KindConflict, "already subscribed to this plan", "already-subscribed", "Already subscribed",
		"A subscription already entitles you to this plan; manage it in the billing portal.")
	ErrNoWebCustomer = newError(KindNotFound, "no web customer is linked to the user", "no-billing-account", "No billing account",
		"There is no web billing account to manage yet.")
	// ErrCheckoutOfAnother: a checkout session that is not the caller's (or no session).
	ErrCheckoutOfAnother = newError(KindRefused, "the checkout session belongs to another user", "checkout-of-another", "Not your checkout",
		"This checkout session is not yours; nothing was applied.")
	// ErrManagedInApp: only a subscription bought in the mobile app entitles the user. It
	// is changed or cancelled in the app's store, and a web purchase beside it would bill
	// them twice: checkout and the portal both answer with ManagedInAppMessage.
	ErrManagedInApp = newError(KindConflict, "the subscription is managed in the mobile app's store", "managed-in-app", "Managed in the app",
		ManagedInAppMessage)

	// A purchase the app reports (POST /api/v1/billing/purchases).
	ErrUnknownStore = newError(KindInvalid, "this store is not configured", "unknown-store", "Store not configured",
		"This server does not hear that store.")
	ErrUnverifiedPurchase = newError(KindInvalid, "the purchase could not be verified with the store", "unverified-purchase", "Purchase not verified",
		"The store does not vouch for this purchase.")
	ErrPurchaseOfAnother = newError(KindConflict, "the purchase belongs to another user", "purchase-of-another", "Another user's purchase",
		"This purchase is linked to another user; nothing changed.")

	// Grants.
	ErrGrantPlan = newError(KindInvalid, "no such plan", "invalid-grant", "Unknown plan",
		"There is no such plan to grant: name a plan of the plans file by its key.")
	ErrGrantEnd = newError(KindInvalid, "the end must be in the future", "invalid-grant", "End not in the future",
		"A grant's end (until) must be in the future, or its duration above zero.")
	ErrGrantLength = newError(KindInvalid, "give either an end or a duration", "invalid-grant", "End or duration",
		"Give the grant's end as until (an RFC 3339 time) or duration (such as 30d, 12h or 90m), exactly one of them.")
	ErrGrantReason = newError(KindInvalid, "a reason is required", "invalid-grant", "Reason required",
		"Say why, in reason: the audit log keeps it.")
	ErrGrantUser = newError(KindInvalid, "the user id must be a UUID", "invalid-grant", "Invalid user",
		"A grant's user is an identity user's id, a UUID.")
	ErrGrantDuration = newError(KindInvalid, "the duration is not one tollgate takes", "invalid-grant", "Invalid duration",
		"A grant's duration is written such as 30d, 12h or 90m, and a grant lasts at most 36500d (100 years).")
	ErrGrantText = newError(KindInvalid, "the plan or reason holds a NUL character", "invalid-grant", "Invalid text",
		"The plan and the reason must be text without NUL (\\0) characters.")
	ErrNoGrant    = newError(KindNotFound, "no such grant", "no-grant", "No such grant", "There is no such grant for this user.")
	ErrGrantEnded = newError(KindConflict, "the grant has already ended", "grant-ended", "Grant ended",
		"This grant has already ended or been revoked; nothing changed.")
)

// ManagedInAppMessage is the one answer, on the API and the account page, to a user whom
// only a subscription bought in the mobile app entitles (ErrManagedInApp).
const ManagedInAppMessage = "Your subscription was bought in the mobile app: change or cancel it in the app's store " +
	"(the App Store or Google Play settings), not here."

// ProviderError is a provider's API refusing or failing to create a session. Its text is
// ours: the provider's message stays out of answers and logs.
type ProviderError struct{ Status int }

func (e *ProviderError) Error() string { return "the web provider could not create the session" }

// Kind says a provider failed: trying again later may succeed.
func (e *ProviderError) Kind() Kind { return KindProviderFailed }

// Invalid is an event that can never be processed as sent (a missing or malformed field).
// It is stored with the message and answered 200; a replay runs it again once the cause
// is fixed.
type Invalid struct{ Msg string }

func (e *Invalid) Error() string { return e.Msg }

// Kind is KindInvalid: the event can never be processed as sent.
func (e *Invalid) Kind() Kind { return KindInvalid }

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

// Kind is KindUnresolved.
func (e *Unresolved) Kind() Kind { return KindUnresolved }

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

// Kind is KindInvalid: the body can never be stored as an event.
func (e *BodyError) Kind() Kind { return KindInvalid }

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
	ErrNoSecret          = verificationRefusal("no signing secret configured")
	ErrSignatureMismatch = verificationRefusal("no signature matches")
	ErrMissingHeader     = verificationRefusal("no signature or authorization header")
	ErrAmbiguousHeader   = verificationRefusal("more than one signature or authorization header")
)

func verificationRefusal(msg string) *Error {
	return newError(KindRefused, msg, "invalid-signature", "Unauthorized", "The webhook signature or authorization is missing or does not match.")
}
