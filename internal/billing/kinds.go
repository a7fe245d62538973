package billing

import "errors"

// Kind is what sort of failure an error is. Billing says the kind where the error is made;
// each surface (the API, the forms, the webhooks, the commands) turns kinds into its own
// answers in one place, so that no surface keeps a list of error values in step with this
// package.
type Kind string

// The kinds. An error of no kind (KindOf says "") is a failure of the database or of a
// dependency: the surfaces answer it as unavailable and say nothing of its cause.
const (
	// KindInvalid: the request or event can never succeed as sent.
	KindInvalid Kind = "invalid"
	// KindUnresolved: it names a customer, a price or a product tollgate cannot map (yet).
	KindUnresolved Kind = "unresolved"
	// KindNotFound: what it asks about does not exist.
	KindNotFound Kind = "not_found"
	// KindConflict: the current state does not allow it (already subscribed, managed elsewhere).
	KindConflict Kind = "conflict"
	// KindRefused: not the caller's to do or to have (another's purchase, a plan's limit, a
	// webhook's signature).
	KindRefused Kind = "refused"
	// KindUnconfigured: this server is not set up for it.
	KindUnconfigured Kind = "unconfigured"
	// KindProviderFailed: a provider's API refused or failed; trying again later may succeed.
	KindProviderFailed Kind = "provider_failed"
)

// kinded is any error that says its kind.
type kinded interface{ Kind() Kind }

// KindOf is the kind of the first error in err's chain that says one, or "" for a failure.
func KindOf(err error) Kind {
	var k kinded
	if errors.As(err, &k) {
		return k.Kind()
	}
	return ""
}

// IsAnswer says whether err is the domain's answer rather than a failure: nothing to
// retry and nothing wrong with the database.
func IsAnswer(err error) bool {
	k := KindOf(err)
	return k != "" && k != KindProviderFailed
}

// Error is one of billing's answers that is not a failure: its kind, a stable code the
// surfaces name it by (the API's problem type), a title, and a detail safe to show to
// whoever asked. Its Error text is for logs and commands.
type Error struct {
	kind                Kind
	Code, Title, Detail string
	msg                 string
}

func (e *Error) Error() string { return e.msg }

// Kind is e's kind.
func (e *Error) Kind() Kind { return e.kind }

func newError(kind Kind, msg, code, title, detail string) *Error {
	return &Error{kind: kind, msg: msg, Code: code, Title: title, Detail: detail}
}

// AsError is the first *Error in err's chain, or nil.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}
