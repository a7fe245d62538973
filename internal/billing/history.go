package billing

import (
	"errors"
	"time"
)

// HistoryEvent is an event a provider sent, or tried to send, read back from its API and
// verified as its delivery would have been: Body is what the delivery carried, At when the
// provider signed it, ID the event's id (for reports).
type HistoryEvent struct {
	ID   string
	At   time.Time
	Body []byte
}

// HistoryPage is one page of a provider's history. Refused are the items that did not
// verify, with why: they are left out, never applied. Next reads the page after ("" on
// the last).
type HistoryPage struct {
	Events  []HistoryEvent
	Refused []error
	Next    string
}

// What a store's API answers, read by what it means; its adapter's errors match them
// (errors.Is).
var (
	// ErrAPIRefused: the store's API refused tollgate itself — its key, its account or its
	// app — so no other read can succeed until the settings are fixed.
	ErrAPIRefused = errors.New("the store's API refused tollgate's settings")
	// ErrHistoryStartTooOld: the store keeps no history as far back as the read's start.
	ErrHistoryStartTooOld = errors.New("the store keeps no history that far back")
	// ErrHistoryPageExpired: the store no longer takes the page token a read resumed with.
	ErrHistoryPageExpired = errors.New("the store's page token has expired")
	// ErrHistoryPaging: the store's pages do not lead on — a page token met before, or
	// "more to come" without one; the read stops rather than loop or end early.
	ErrHistoryPaging = errors.New("the store's history pages do not lead on")
)
