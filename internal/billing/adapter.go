package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// An Adapter is one provider's dialect: how its webhooks are verified, what an event is
// called, and what it says about a subscription. It never touches the database: the
// pipeline locks the subscription's stored row, asks the adapter what the event makes of
// it, stores what it answers and writes the canonical row from the facts it reads back.
// Adapters are passed to the pipeline and the webhook surface explicitly, as a list.
type Adapter interface {
	// Provider is the provider's name (see ProviderWeb): the key of its events and rows
	// and the last segment of its webhook path.
	Provider() string
	// Verify checks a request's authenticity from its headers and raw body, before
	// anything is stored. Any error refuses the request (401) and is logged, never shown;
	// a *BodyError is a body the provider's scheme cannot even read (400).
	Verify(h http.Header, body []byte, now time.Time) error
	// Parse names the event of a verified body. The body is valid UTF-8; an error is a
	// *BodyError (400). Event.Answer set: answer it without recording anything.
	Parse(body []byte) (Event, error)
	// Read says what a stored event means: what it is about, when, and what it carries.
	// ev is what Parse gave (on a replay: its ID and Type only, Decoded nil). Errors are
	// *Invalid or *Unresolved (stored with the event, answered 200) or a failure.
	Read(ev Event, body []byte) (Reading, error)
	// Order says whether the reading replaces the state stored for its subscription. It is
	// asked only when something is stored and the reading is not that very event.
	Order(r Reading, stored Stored) Order
	// Apply gives the state to store once r supersedes stored: the provider's snapshot, or
	// the result of folding r into stored. decoded is the adapter's reading of that state,
	// handed back to Facts so that it need not decode it again (nil is fine).
	Apply(r Reading, stored Stored) (state []byte, decoded any, err error)
	// Facts turns the stored state into the canonical facts the subscription's row is
	// written from.
	Facts(stored Stored) (Facts, error)
}

// Event is a verified event as Parse names it.
type Event struct {
	ID   string
	Type string
	// Answer, when set, is the whole answer: 200 with it, nothing recorded.
	Answer *Answer
	// Decoded is the adapter's own decoding of the body, kept from Parse to Read so that a
	// body is read once; nil when Read must decode the body itself.
	Decoded any
}

// Answer is a 200 that records nothing: a provider's set-up probe, or an event from an
// environment the operator filtered out.
type Answer struct {
	Outcome string // for the outcome header, logs and metrics
	Body    any    // encoded as the JSON body; nil: {"received":true}
	Log     string // when set, logged at info with the outcome
}

// Reading is what one event says.
type Reading struct {
	// Subscription is the provider subscription the event is about. With Ignore set the
	// event is about nothing tollgate keeps: it is recorded, answered 200 and logged.
	Subscription string
	Ignore       string // why, as the log line says it
	// Type is the event type as the subscription records it (an alias already resolved);
	// At is the event's time, which orders it.
	Type string
	At   time.Time
	// Snapshot: the reading is the provider's state read from its API at At (a backfill),
	// not an event; it is ordered by the time of the read. ReadAt is that time exactly,
	// when At is coarser (to the second, as the provider's event times are): it orders the
	// read against an earlier read of the same subscription, so that a later read always
	// counts as newer. Zero: At is exact.
	Snapshot bool
	ReadAt   time.Time
	// Customer is the provider's customer id, kept on the subscription's row.
	Customer string
	// Payment, when set, is all the event carries: a payment that extends the paid period
	// and changes no stored state. First says who and what it is for, resolved before a
	// payment is kept for a subscription nothing else has been heard of.
	Payment *Payment
	First   *Facts
	// Decoded is the adapter's own reading, for Order and Apply.
	Decoded any
	// AnswerBefore, when set and earlier than the event's processing, is the instant whose
	// answer a change announces as the previous one: for an end no store announces (a
	// grant's), recorded after it passed, the answer changed at the end itself.
	AnswerBefore time.Time
	// Replaces, when set, is a subscription of the same provider that this one replaces
	// (an upgrade): it ends at At. Its adapter's Apply is asked for its state with a
	// Reading of type ReplacedEventType.
	Replaces string
}

// ReplacedEventType is the event type of a subscription's end by its replacement.
const ReplacedEventType = "tollgate.replaced"

// Payment is a paid period: paid through Through, at At. Payments combine as running
// maxima, so they apply the same in any order.
type Payment struct {
	Through time.Time
	At      time.Time
}

// Stored is a provider subscription's stored row, as adapters see it.
type Stored struct {
	// State is what Apply last gave, or empty; Decoded its reading when it was just
	// written (else nil).
	State   string
	Decoded any
	// The event that wrote State ("" and zero when none has).
	LastEventID, LastEventType string
	LastEventAt                time.Time
	Customer                   string
	// The payments seen: the latest paid-through and the latest payment's time.
	PaidThrough, PaidAt *time.Time
	// LastReadAt is when the latest read that found State as it is was made, exactly
	// (zero: none since State was written). Such a read writes nothing of the row; its
	// place among events is in LastEventAt, which is the later of the two.
	LastReadAt time.Time
}

// HasState says whether an event has written the row's state.
func (s Stored) HasState() bool { return s.LastEventID != "" }

// Order is how a reading stands to the stored state.
type Order int

const (
	// Supersedes: the reading replaces the stored state.
	Supersedes Order = iota
	// Stale: the stored state is newer; the reading changes nothing.
	Stale
	// Same: a snapshot that finds the state it read already stored writes nothing.
	Same
)

// ByTime is the rule every provider starts from: a later event wins, an earlier one is
// stale, and decided is false for the same instant, which each provider breaks its own way.
func ByTime(at time.Time, stored Stored) (o Order, decided bool) {
	switch {
	case !stored.HasState(), at.After(stored.LastEventAt):
		return Supersedes, true
	case at.Before(stored.LastEventAt):
		return Stale, true
	}
	return Supersedes, false
}

// BySnapshot places a state read from the provider's API (a backfill), r: a stored state
// that is final, or from an event as new as the read or newer, stands, since that event may
// hold a change the read did not see. A stored state that is itself a read stands only
// when it was read at the same time or later, to the read's exact time: a second read in
// the same second is newer than the first. A read of exactly what the last read stored
// (same) changes nothing, so a second run writes nothing; anything else is superseded.
func BySnapshot(r Reading, stored Stored, final bool, same func() bool) Order {
	switch {
	case !stored.HasState():
		return Supersedes
	case final:
		return Stale
	}
	if last, ok := lastRead(stored); ok {
		switch {
		case !r.ReadTime().After(last):
			return Stale
		case same():
			return Same
		}
		return Supersedes
	}
	if !r.At.After(stored.LastEventAt) {
		return Stale
	}
	return Supersedes
}

// ReadTime is when a snapshot was read, exactly.
func (r Reading) ReadTime() time.Time {
	if r.ReadAt.IsZero() {
		return r.At
	}
	return r.ReadAt
}

// lastRead is when the stored state was read, exactly, if it is a read: from its
// SnapshotEventID, else (a read stored under an event's id) its LastEventAt — or when a
// later read found it the same, if one did.
func lastRead(stored Stored) (time.Time, bool) {
	if stored.LastEventType != SnapshotEventType {
		return time.Time{}, false
	}
	at, ok := snapshotTime(stored.LastEventID)
	if !ok {
		at = stored.LastEventAt
	}
	return later(at, stored.LastReadAt), true
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Facts is what a stored state says about the canonical subscription.
type Facts struct {
	// Customer names the user; Unresolved is the error when it names nobody tollgate
	// knows. Link is the provider customer id that, once linked to the user, resolves
	// later events without a user id (today only the web provider's customers link).
	Link       string
	UserID     string
	Unresolved error
	// KeepsUser: the subscription stays with the user its canonical row names once one
	// does (a store's, linked by the purchase the app reported or by an earlier event):
	// a state that names no user keeps that user, and one that names another is
	// unresolved, never moved. A store's later notifications need not carry the token the
	// purchase was linked by.
	KeepsUser bool
	// Status is canonical; PeriodEnd the access horizon (nil: none).
	Status    string
	PeriodEnd *time.Time
	// Lasts, for a one-time purchase, says how its product's `lasts` (the plans file) sets
	// the access horizon when PeriodEnd is nil: from Purchased for that long.
	Lasts     LastsRule
	Purchased time.Time
	// Products are the provider's price or product ids the plan is mapped from, in the
	// plans file's list of PriceList's prices ("": the provider's own; a store whose
	// product ids are the app's, as the mobile provider's are, names ProviderMobile).
	Products  []string
	PriceList string
	// PlanKey, when set, names the plan itself, by its key in the plans file: a
	// subscription no store sold (a grant) has no product to map.
	PlanKey string
	// Amount and Currency, when the provider sends them: the price per billing period in
	// the currency's minor unit, quantity included. Period is that billing period as an
	// ISO 8601 duration ("P1M", "P1Y"), "" when unknown.
	Amount   int64
	Currency string
	Period   string
}

// LastsRule is how a purchase's product's `lasts` applies to it.
type LastsRule int

const (
	// NoLasts: the provider gives the horizon (a subscription, or a purchase owned for
	// good whatever the plans file says, as an App Store Non-Consumable).
	NoLasts LastsRule = iota
	// LastsOrForGood: for `lasts` from the purchase when its product has one, else for
	// good (a Google Play one-time product, whose kind Google does not say).
	LastsOrForGood
	// LastsRequired: for `lasts` from the purchase; without one the purchase entitles
	// nothing and its event is unresolved (an App Store Non-Renewing Subscription).
	LastsRequired
)

// A Fetcher has network work to do for an event before its transaction: reading the
// purchase from the provider's API, say, at now. An error answers 503 and the provider
// retries.
type Fetcher interface {
	Fetch(ctx context.Context, ev Event, body []byte, now time.Time) (Event, error)
}

// A Committer acts after the transaction that applied an event commits: acknowledging a
// purchase, say. Its failure answers 503, so that the provider delivers the event again
// and the action is tried again; the event stays applied.
type Committer interface {
	Committed(ctx context.Context, ev Event, outcome string) error
}

// A Claimer verifies a purchase the app reports for its signed-in user (POST
// /api/v1/billing/purchases) and reads it as a snapshot of its subscription, as of when
// the store signed it, linked to that user. A proof that does not verify is
// ErrUnverifiedPurchase; a purchase the store links to another user ErrPurchaseOfAnother.
type Claimer interface {
	Claim(ctx context.Context, proof Proof, userID string, now time.Time) (Reading, error)
}

// Proof is what the app holds of a purchase: an App Store signed transaction, or a Google
// Play purchase token and its product.
type Proof struct {
	SignedTransaction string
	PurchaseToken     string
	ProductID         string
}

// A Snapshotter reads the provider's state of a subscription, as its API returns it, into
// a Reading ordered by the time of the read (Reading.Snapshot).
type Snapshotter interface {
	ReadSnapshot(raw []byte, at time.Time) (Reading, SnapshotInfo, error)
}

// SnapshotInfo is what a backfill reports of a subscription it read.
type SnapshotInfo struct {
	Subscription string
	Customer     string
	Created      time.Time
}

// SingleHeader is the one value a request carries under any of names. Two values, under
// one name or several, are refused rather than guessed at: which of them a proxy or an
// attacker added cannot be told.
func SingleHeader(h http.Header, names ...string) (string, error) {
	var values []string
	for _, name := range names {
		values = append(values, h.Values(name)...)
	}
	switch len(values) {
	case 0:
		return "", ErrMissingHeader
	case 1:
		return values[0], nil
	}
	return "", ErrAmbiguousHeader
}

// SnapshotEventType is the event type recorded for a state read from a provider's API;
// SnapshotEventID names the read made at at, where an event's id would be, to the
// nanosecond ("backfill_<unix seconds>.<nanoseconds>"), so that two reads of one second
// have two names and the later can be told.
const SnapshotEventType = "tollgate.backfill"

func SnapshotEventID(at time.Time) string {
	return fmt.Sprintf("backfill_%d.%09d", at.Unix(), at.Nanosecond())
}

// snapshotTime is the time a SnapshotEventID names; one written before reads were named
// to the nanosecond ("backfill_<unix seconds>") names its second.
func snapshotTime(id string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(id, "backfill_")
	if !ok {
		return time.Time{}, false
	}
	secs, nanos, _ := strings.Cut(rest, ".")
	s, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	var ns int64
	if nanos != "" {
		if ns, err = strconv.ParseInt(nanos, 10, 64); err != nil || len(nanos) != 9 {
			return time.Time{}, false
		}
	}
	return time.Unix(s, ns).UTC(), true
}

// StoredState is an adapter's stored state as its own type T: Decoded when Apply has just
// written it (a *T), else State decoded; the zero T when nothing is stored.
func StoredState[T any](stored Stored) (T, error) {
	var s T
	if d, ok := stored.Decoded.(*T); ok {
		return *d, nil
	}
	if stored.State == "" || stored.State == "{}" {
		return s, nil
	}
	err := json.Unmarshal([]byte(stored.State), &s)
	return s, err
}
