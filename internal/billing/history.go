package billing

import "time"

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
