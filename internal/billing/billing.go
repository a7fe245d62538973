// Package billing is the billing core: the vocabulary every store's events are turned
// into (providers, statuses, plans, subscriptions, a user's position and the view every
// surface shows), the rules that need no I/O (which subscription governs, what supersedes
// what, whether an answer changed) and the contract a provider adapter implements.
//
// It depends on nothing else of tollgate's. Around it: one adapter package per provider
// (stripe, adapty) that verifies and reads that provider's events; the pipeline that
// stores and applies them; the reader that answers questions; and the surfaces (webhooks,
// api, forms, commands) above those. docs/billing.md, "How billing is built", draws it.
package billing

import "time"

// The providers the core's rules name. A provider's name is stored with its events and rows
// and is the last segment of its webhook's path. web and mobile name the plans file's two
// price lists too (web_prices, mobile_products); every other store names itself, in its
// own package.
const (
	ProviderWeb    = "web"
	ProviderMobile = "mobile"
	// ProviderGrant is what support gives by hand: one plan to one user until an end,
	// sold by no store. Its end is its own; no event announces it.
	ProviderGrant = "grant"
)

// Canonical subscription statuses: every provider's states map onto these.
const (
	StatusActive    = "active"
	StatusTrialing  = "trialing"
	StatusPastDue   = "past_due"
	StatusCancelled = "cancelled"
	StatusExpired   = "expired"
	StatusRefunded  = "refunded"
)

// Outcomes of processing one event, as answered, logged and counted.
const (
	OutcomeApplied    = "applied"
	OutcomeDuplicate  = "duplicate"
	OutcomeStale      = "stale"
	OutcomeIgnored    = "ignored"
	OutcomeUnresolved = "unresolved"
	OutcomeInvalid    = "invalid"
)

// Outcomes are every outcome, unresolved and invalid first: those that need someone.
var Outcomes = []string{OutcomeUnresolved, OutcomeInvalid, OutcomeApplied, OutcomeDuplicate, OutcomeStale, OutcomeIgnored}

// MinRetention is the shortest time a stored event may be kept (EVENT_RETENTION): Apple's
// notification history reaches 180 days back, and a redelivery from it must still find its
// event.
const MinRetention = 180 * 24 * time.Hour

// EntitlementsChanged is the outbound event type of a change of a user's billing answer.
const EntitlementsChanged = "entitlements.changed"

// ChangeCause is the provider event whose processing changed a user's billing answer.
type ChangeCause struct {
	Provider        string `json:"provider"`
	ProviderEventID string `json:"provider_event_id"`
	EventType       string `json:"event_type"`
}

// IsUUID says whether s is a UUID in its textual form: what an identity user id is, and
// so what an id a provider carries must be before it names a user.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if r != '-' {
				return false
			}
		case r >= '0' && r <= '9', r >= 'a' && r <= 'f', r >= 'A' && r <= 'F':
		default:
			return false
		}
	}
	return true
}

// MonthEnd is when the calendar month of t ends (UTC): the usage period of a user whom no
// subscription with a period end governs.
func MonthEnd(t time.Time) time.Time {
	y, m, _ := t.UTC().Date()
	return time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
}

// FirstTime is the first of ts that is set.
func FirstTime(ts ...*time.Time) *time.Time {
	for _, t := range ts {
		if t != nil {
			return t
		}
	}
	return nil
}

// UnixTime is a Unix time in seconds as a UTC time.
func UnixTime(sec int64) *time.Time {
	t := time.Unix(sec, 0).UTC()
	return &t
}
