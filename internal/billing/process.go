package billing

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"reflect"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Canonical subscription statuses (SPEC 3).
const (
	StatusActive    = "active"
	StatusTrialing  = "trialing"
	StatusPastDue   = "past_due"
	StatusCancelled = "cancelled"
	StatusExpired   = "expired"
	StatusRefunded  = "refunded"
)

// Processing outcomes, as logged and counted.
const (
	outcomeApplied    = "applied"
	outcomeDuplicate  = "duplicate"
	outcomeStale      = "stale"
	outcomeIgnored    = "ignored"
	outcomeUnresolved = "unresolved"
	outcomeInvalid    = "invalid"
)

const (
	webSubscriptionCreated = "customer.subscription.created"
	webSubscriptionUpdated = "customer.subscription.updated"
	webSubscriptionDeleted = "customer.subscription.deleted"
	webInvoicePaid         = "invoice.payment_succeeded"
)

// mobileRank orders mobile event types that carry the same timestamp: a later stage of a
// subscription's life wins the tie. Only these seven types are handled.
var mobileRank = map[string]int{
	"subscription_started":      1,
	"subscription_renewed":      1,
	"non_subscription_purchase": 1,
	"access_level_updated":      1,
	"subscription_cancelled":    2,
	"subscription_expired":      3,
	"subscription_refunded":     3,
}

// txn is the queries of one event's transaction, what caused it, and the users whose
// billing answer it changed: they are told (OnBillingChange) once it commits.
type txn struct {
	*dbq.Queries
	cause   ChangeCause
	changed []string
	// outbox holds the outbound events of the changes, recorded before the transaction
	// commits (markProcessed, recordChanges).
	outbox []dbq.InsertOutboundDeliveryParams
	user   string // the user the event resolved to, if it did
	// plansVersion is the plan catalogue's version, as the transaction's lock read it.
	plansVersion int64
}

// LockProviderSubscription locks the row (see the query) and notes the plan catalogue's
// version, which comes with it.
func (q *txn) LockProviderSubscription(ctx context.Context, arg dbq.LockProviderSubscriptionParams) (dbq.LockProviderSubscriptionRow, error) {
	row, err := q.Queries.LockProviderSubscription(ctx, arg)
	q.plansVersion = row.PlansVersion
	return row, err
}

// Processed is what became of an event: its outcome (applied, duplicate, stale, ignored,
// unresolved, invalid), the user it resolved to, and for unresolved and invalid events
// the reason stored with it.
type Processed struct {
	Outcome string
	UserID  string
	Reason  string
	changed []string
}

// processEvent runs the provider's processor over a stored event and marks it processed.
// The processor's writes sit behind a savepoint: an event that resolves to no user or plan,
// or that can never be processed, leaves every canonical row exactly as it was, and its
// reason is stored on the event so that `events replay --unprocessed` finds it again. Any
// other error is returned so the transaction rolls back and the provider retries.
func (s *Service) processEvent(ctx context.Context, tx *sql.Tx, rowID, provider, eventID, eventType string, body []byte) (Processed, error) {
	if _, err := tx.ExecContext(ctx, "savepoint process_event"); err != nil {
		return Processed{}, err
	}
	q := &txn{Queries: dbq.New(tx), cause: ChangeCause{Provider: provider, ProviderEventID: eventID, EventType: eventType}}
	var outcome string
	var err error
	switch provider {
	case ProviderWeb:
		outcome, err = s.processWeb(ctx, q, eventID, body)
	case ProviderMobile:
		outcome, err = s.processMobile(ctx, q, eventID, body)
	}
	var perm permanentError
	var unresolved unresolvedError
	processingError := sql.NullString{}
	switch {
	case errors.As(err, &unresolved):
		outcome = outcomeUnresolved
		processingError = sql.NullString{String: unresolved.Error(), Valid: true}
		s.log.InfoContext(ctx, unresolved.what, append([]any{"provider", provider, "event_id", eventID}, unresolved.ids...)...)
	case errors.As(err, &perm):
		outcome = outcomeInvalid
		processingError = sql.NullString{String: perm.msg, Valid: true}
		s.log.WarnContext(ctx, "webhook event cannot be processed", "provider", provider, "event_id", eventID, "error", perm.msg)
	case err != nil:
		return Processed{}, err
	}
	if processingError.Valid {
		if _, err := tx.ExecContext(ctx, "rollback to savepoint process_event"); err != nil {
			return Processed{}, err
		}
		q.changed, q.outbox, q.user = nil, nil, ""
	}
	if err := s.markProcessed(ctx, q, dbq.MarkEventProcessedParams{ID: rowID, ProcessedAt: sql.NullTime{Time: s.now(), Valid: true}, ProcessingError: processingError}); err != nil {
		return Processed{}, err
	}
	return Processed{Outcome: outcome, UserID: q.user, Reason: processingError.String, changed: q.changed}, nil
}

// webSnapshot is what provider_subscriptions.state holds for a web subscription: the
// object of the last applied subscription event and that event's previous_attributes.
type webSnapshot struct {
	Object             json.RawMessage            `json:"object"`
	PreviousAttributes map[string]json.RawMessage `json:"previous_attributes,omitempty"`
}

func (s *Service) processWeb(ctx context.Context, q *txn, eventID string, body []byte) (string, error) {
	var ev webEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return "", permanent("web event: %v", jsonProblem(err))
	}
	switch ev.Type {
	case webSubscriptionCreated, webSubscriptionUpdated, webSubscriptionDeleted:
		return s.applyWebSubscription(ctx, q, ev)
	case webInvoicePaid:
		return s.applyWebInvoice(ctx, q, ev)
	}
	s.log.InfoContext(ctx, "webhook event type ignored", "provider", ProviderWeb, "event_id", eventID, "event_type", ev.Type)
	return outcomeIgnored, nil
}

func (s *Service) applyWebSubscription(ctx context.Context, q *txn, ev webEvent) (string, error) {
	sub, err := decodeWebSubscription(ev.Data.Object)
	if err != nil {
		return "", err
	}
	ps, err := q.LockProviderSubscription(ctx, dbq.LockProviderSubscriptionParams{Provider: ProviderWeb, ProviderSubscriptionID: sub.ID, Now: s.now()})
	if err != nil {
		return "", err
	}
	incoming := webSnapshot{Object: ev.Data.Object, PreviousAttributes: ev.Data.PreviousAttributes}
	at := time.Unix(ev.Created, 0).UTC()

	outcome := outcomeApplied
	var stored *webSubscription // the stored snapshot's subscription, when it is this one
	switch {
	case ps.LastEventID.String == ev.ID:
		outcome = outcomeDuplicate
	case !webSupersedes(ev.Type, at, incoming, ps):
		outcome = outcomeStale
	default:
		state, err := json.Marshal(incoming)
		if err != nil {
			return "", err
		}
		ps.State = string(state)
		ps.ProviderCustomerID = nullString(string(sub.Customer))
		ps.LastEventID, ps.LastEventType, ps.LastEventAt = nullString(ev.ID), nullString(ev.Type), nullTime(&at)
		if err := s.saveProviderSubscription(ctx, q, ps); err != nil {
			return "", err
		}
		stored = &sub
	}
	// Materialising again on a duplicate or stale event is idempotent, and lets a replay
	// carry a plan or customer link fixed since into the canonical row.
	return s.materialiseWeb(ctx, q, ps, stored, outcome)
}

// webSupersedes says whether an incoming subscription event replaces the stored snapshot.
// Later events win. Within one second, which is common (a checkout emits created and
// updated together), a created never replaces anything, a deleted always does, and an
// updated applies unless the stored snapshot is provably its successor. A deleted snapshot
// is final: only another deleted replaces it.
func webSupersedes(eventType string, at time.Time, incoming webSnapshot, ps providerSubscription) bool {
	if !ps.LastEventID.Valid {
		return true
	}
	stored := ps.LastEventType.String
	switch {
	case eventType == webSubscriptionDeleted:
		return true
	case stored == webSubscriptionDeleted, eventType == webSubscriptionCreated:
		return false
	case at.After(ps.LastEventAt.Time):
		return true
	case at.Before(ps.LastEventAt.Time):
		return false
	}
	// An updated in the same second as the stored created or updated.
	if stored == webSubscriptionCreated {
		return true
	}
	var current webSnapshot
	if json.Unmarshal([]byte(ps.State), &current) != nil {
		return true
	}
	if attributesAgree(incoming.PreviousAttributes, current.Object) {
		return true // the incoming event continues from the stored state
	}
	if attributesAgree(current.PreviousAttributes, incoming.Object) {
		return false // the stored event already continued from the incoming state
	}
	return true // nothing tells them apart: the later arrival wins
}

// attributesAgree reports whether every previous attribute has that value in object.
func attributesAgree(previous map[string]json.RawMessage, object json.RawMessage) bool {
	if len(previous) == 0 {
		return false
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(object, &fields) != nil {
		return false
	}
	for key, want := range previous {
		var a, b any
		if json.Unmarshal(want, &a) != nil {
			return false
		}
		if got, ok := fields[key]; ok && json.Unmarshal(got, &b) != nil {
			return false
		}
		if !reflect.DeepEqual(a, b) {
			return false
		}
	}
	return true
}

func (s *Service) applyWebInvoice(ctx context.Context, q *txn, ev webEvent) (string, error) {
	inv, err := decodeWebInvoice(ev.Data.Object)
	if err != nil {
		return "", err
	}
	subID := inv.subscriptionID()
	if subID == "" {
		s.log.InfoContext(ctx, "invoice without subscription ignored", "provider", ProviderWeb, "event_id", ev.ID)
		return outcomeIgnored, nil
	}
	paid := inv.paidThrough()
	if paid == nil {
		return "", permanent("invoice %s has no line periods", inv.ID)
	}
	ps, err := q.LockProviderSubscription(ctx, dbq.LockProviderSubscriptionParams{Provider: ProviderWeb, ProviderSubscriptionID: subID, Now: s.now()})
	if err != nil {
		return "", err
	}
	if !ps.LastEventID.Valid && !ps.PaidThrough.Valid {
		// The first word of this subscription: the invoice must resolve on its own, since
		// no snapshot vouches for it yet.
		if _, err := s.resolveWebCustomer(ctx, q, string(inv.Customer), inv.userID()); err != nil {
			return "", err
		}
		if _, err := s.resolvePlan(ctx, q, ProviderWeb, inv.priceIDs()); err != nil {
			return "", err
		}
	}
	at := time.Unix(ev.Created, 0).UTC()
	// Both are running maxima, so invoices combine the same way in any order.
	outcome := outcomeDuplicate
	if !ps.PaidThrough.Valid || paid.After(ps.PaidThrough.Time) {
		ps.PaidThrough, outcome = nullTime(paid), outcomeApplied
	}
	if !ps.PaidEventAt.Valid || at.After(ps.PaidEventAt.Time) {
		ps.PaidEventAt, outcome = nullTime(&at), outcomeApplied
	}
	if outcome == outcomeApplied {
		if err := s.saveProviderSubscription(ctx, q, ps); err != nil {
			return "", err
		}
	}
	if !ps.LastEventID.Valid {
		return outcome, nil // no subscription event yet: it will pick the payment up
	}
	return s.materialiseWeb(ctx, q, ps, nil, outcome)
}

// materialiseWeb writes the canonical subscription for the stored web snapshot. stored is
// the snapshot's subscription if the caller has just decoded it, which spares decoding the
// state again; else nil.
func (s *Service) materialiseWeb(ctx context.Context, q *txn, ps providerSubscription, stored *webSubscription, outcome string) (string, error) {
	if stored == nil {
		var snap webSnapshot
		if err := json.Unmarshal([]byte(ps.State), &snap); err != nil {
			return "", err
		}
		sub, err := decodeWebSubscription(snap.Object)
		if err != nil {
			return "", err
		}
		stored = &sub
	}
	sub := *stored
	status, periodEnd, err := webCanonical(sub, ps.LastEventAt.Time, timePtr(ps.PaidThrough), timePtr(ps.PaidEventAt))
	if err != nil {
		return "", err
	}
	customer, err := s.resolveWebCustomer(ctx, q, string(sub.Customer), sub.userID())
	if err != nil {
		return "", err
	}
	plan, err := s.resolvePlan(ctx, q, ProviderWeb, sub.priceIDs())
	if err != nil {
		return "", err
	}
	return outcome, s.upsertSubscription(ctx, q, customer.userID, dbq.UpsertSubscriptionParams{
		ProviderSubscriptionID: ps.ID, BillingCustomerID: customer.id, PlanID: plan, Provider: ProviderWeb,
		Status: status, CurrentPeriodEnd: nullTime(periodEnd), Now: s.now(),
	})
}

// webCanonical maps a web subscription snapshot, and the payments seen for it, to the
// canonical status and access horizon (DESIGN §4.5). Times come from the events, never
// from the clock, so the result does not depend on when or in which order events arrive.
func webCanonical(sub webSubscription, snapshotAt time.Time, paidThrough, paidAt *time.Time) (string, *time.Time, error) {
	end := sub.periodEnd()
	var status string
	var horizon *time.Time
	switch sub.Status {
	case "trialing":
		status, horizon = StatusTrialing, firstTime(unixPtr(sub.TrialEnd), end)
	case "active":
		if sub.CancelAtPeriodEnd || sub.CancelAt != nil {
			status, horizon = StatusCancelled, firstTime(unixPtr(sub.CancelAt), end)
		} else {
			status, horizon = StatusActive, end
		}
	case "past_due":
		status, horizon = StatusPastDue, end
	case "incomplete":
		// Awaiting the first payment: present but never entitling until it is paid.
		start := sub.StartDate
		if start == 0 {
			start = sub.Created
		}
		status, horizon = StatusPastDue, firstTime(unixPtr(&start), &snapshotAt)
	case "incomplete_expired", "unpaid", "paused":
		status, horizon = StatusExpired, &snapshotAt
	case "canceled":
		status, horizon = StatusExpired, firstTime(unixPtr(sub.EndedAt), unixPtr(sub.CanceledAt), &snapshotAt)
	default:
		return "", nil, permanent("subscription %s has unknown status %q", sub.ID, sub.Status)
	}
	if paidThrough != nil && status != StatusExpired {
		if status == StatusPastDue && !paidAt.Before(snapshotAt) {
			status = StatusActive
		}
		if horizon != nil && paidThrough.After(*horizon) {
			horizon = paidThrough
		}
	}
	return status, horizon, nil
}

// billingCustomer is a billing_customers row: its id and its identity user.
type billingCustomer struct {
	id     int64
	userID string
}

// resolveWebCustomer finds the billing customer of a web customer id: its link, else the
// identity user id the subscription carries in its metadata, which is then linked.
func (s *Service) resolveWebCustomer(ctx context.Context, q *txn, webCustomerID, userID string) (billingCustomer, error) {
	if webCustomerID != "" {
		c, err := q.GetCustomerByWebID(ctx, nullString(webCustomerID))
		if err == nil {
			return billingCustomer{c.ID, c.UserID}, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return billingCustomer{}, err
		}
	}
	if !isUUID(userID) {
		return billingCustomer{}, unresolved("unresolved web customer", "customer_id", webCustomerID)
	}
	c, err := q.UpsertCustomer(ctx, dbq.UpsertCustomerParams{UserID: userID, Now: s.now()})
	if err != nil {
		return billingCustomer{}, err
	}
	if webCustomerID != "" && !c.WebCustomerID.Valid {
		if err := q.LinkWebCustomer(ctx, dbq.LinkWebCustomerParams{ID: c.ID, WebCustomerID: nullString(webCustomerID), Now: s.now()}); err != nil {
			return billingCustomer{}, err
		}
	}
	return billingCustomer{c.ID, userID}, nil
}

// mobileState is what provider_subscriptions.state holds for a mobile subscription: the
// canonical result of the last applied event and the ids needed to materialise it.
type mobileState struct {
	Status         string     `json:"status"`
	PeriodEnd      *time.Time `json:"period_end"`
	ProductID      string     `json:"product_id"`
	CustomerUserID string     `json:"customer_user_id"`
}

func (s *Service) processMobile(ctx context.Context, q *txn, eventID string, body []byte) (string, error) {
	ev, at, err := decodeMobileEvent(body)
	if err != nil {
		return "", err
	}
	eventType := ev.EventType
	if handled, ok := s.mobileAliases[eventType]; ok {
		eventType = handled
	}
	if _, ok := mobileRank[eventType]; !ok {
		s.log.InfoContext(ctx, "webhook event type ignored", "provider", ProviderMobile, "event_id", eventID, "event_type", ev.EventType)
		return outcomeIgnored, nil
	}
	key := ev.subscriptionKey()
	if key == "" {
		return "", permanent("mobile event has no transaction or profile id")
	}
	ps, err := q.LockProviderSubscription(ctx, dbq.LockProviderSubscriptionParams{Provider: ProviderMobile, ProviderSubscriptionID: key, Now: s.now()})
	if err != nil {
		return "", err
	}
	var current mobileState
	if ps.LastEventID.Valid {
		if err := json.Unmarshal([]byte(ps.State), &current); err != nil {
			return "", err
		}
	}

	outcome := outcomeApplied
	switch {
	case ps.LastEventID.String == eventID:
		outcome = outcomeDuplicate
	case !mobileSupersedes(eventType, at, ps):
		outcome = outcomeStale
	default:
		next, err := mobileCanonical(eventType, ev, at, current)
		if err != nil {
			return "", err
		}
		state, err := json.Marshal(next)
		if err != nil {
			return "", err
		}
		ps.State = string(state)
		ps.ProviderCustomerID = nullString(ev.ProfileID)
		ps.LastEventID, ps.LastEventType, ps.LastEventAt = nullString(eventID), nullString(eventType), nullTime(&at)
		if err := s.saveProviderSubscription(ctx, q, ps); err != nil {
			return "", err
		}
		current = next
	}
	if !ps.LastEventID.Valid {
		return outcome, nil
	}
	return s.materialiseMobile(ctx, q, ps, current, outcome)
}

// mobileSupersedes: later events win; at the same instant the later stage of life wins,
// and between equals the later arrival.
func mobileSupersedes(eventType string, at time.Time, ps providerSubscription) bool {
	switch {
	case !ps.LastEventID.Valid, at.After(ps.LastEventAt.Time):
		return true
	case at.Before(ps.LastEventAt.Time):
		return false
	}
	return mobileRank[eventType] >= mobileRank[ps.LastEventType.String]
}

// mobileCanonical maps one mobile event onto the subscription's state (DESIGN §4.5).
func mobileCanonical(eventType string, ev mobileEvent, at time.Time, current mobileState) (mobileState, error) {
	p := ev.EventProperties
	next := current
	if p.VendorProductID != "" {
		next.ProductID = p.VendorProductID
	}
	if ev.CustomerUserID != nil && *ev.CustomerUserID != "" {
		next.CustomerUserID = *ev.CustomerUserID
	}
	subscriptionExpires, err := optionalMobileTime("subscription_expires_at", p.SubscriptionExpiresAt)
	if err != nil {
		return next, err
	}
	expires, err := optionalMobileTime("expires_at", p.ExpiresAt)
	if err != nil {
		return next, err
	}
	switch eventType {
	case "subscription_started", "subscription_renewed":
		next.Status, next.PeriodEnd = StatusActive, subscriptionExpires
	case "subscription_cancelled":
		next.Status = StatusCancelled
		if subscriptionExpires != nil {
			next.PeriodEnd = subscriptionExpires
		}
	case "subscription_expired":
		next.Status, next.PeriodEnd = StatusExpired, &at
	case "subscription_refunded":
		next.Status, next.PeriodEnd = StatusRefunded, &at
	case "non_subscription_purchase":
		next.Status, next.PeriodEnd = StatusActive, firstTime(expires, subscriptionExpires)
		if p.IsLifetime != nil && *p.IsLifetime {
			next.PeriodEnd = nil
		}
	case "access_level_updated":
		next.PeriodEnd = firstTime(expires, subscriptionExpires)
		switch {
		case isTrue(p.IsRefund):
			next.Status = StatusRefunded
		case p.IsActive != nil && !*p.IsActive:
			next.Status = StatusExpired
		case isTrue(p.IsInGracePeriod):
			next.Status = StatusPastDue
		case p.WillRenew != nil && !*p.WillRenew:
			next.Status = StatusCancelled
		default:
			next.Status = StatusActive
		}
		if isTrue(p.IsLifetime) {
			next.PeriodEnd = nil
		}
	}
	if (next.Status == StatusExpired || next.Status == StatusRefunded) && next.PeriodEnd == nil {
		next.PeriodEnd = &at
	}
	return next, nil
}

func (s *Service) materialiseMobile(ctx context.Context, q *txn, ps providerSubscription, state mobileState, outcome string) (string, error) {
	if !isUUID(state.CustomerUserID) {
		return "", unresolved("unresolved mobile customer", "customer_user_id", state.CustomerUserID, "profile_id", ps.ProviderCustomerID.String)
	}
	plan, err := s.resolvePlan(ctx, q, ProviderMobile, []string{state.ProductID})
	if err != nil {
		return "", err
	}
	c, err := q.UpsertCustomer(ctx, dbq.UpsertCustomerParams{UserID: state.CustomerUserID, Now: s.now()})
	if err != nil {
		return "", err
	}
	return outcome, s.upsertSubscription(ctx, q, state.CustomerUserID, dbq.UpsertSubscriptionParams{
		ProviderSubscriptionID: ps.ID, BillingCustomerID: c.ID, PlanID: plan, Provider: ProviderMobile,
		Status: state.Status, CurrentPeriodEnd: nullTime(state.PeriodEnd), Now: s.now(),
	})
}

// providerSubscription is a locked provider_subscriptions row being worked on.
type providerSubscription = dbq.LockProviderSubscriptionRow

func (s *Service) saveProviderSubscription(ctx context.Context, q *txn, ps providerSubscription) error {
	return q.SaveProviderSubscription(ctx, dbq.SaveProviderSubscriptionParams{
		ID: ps.ID, ProviderCustomerID: ps.ProviderCustomerID, State: ps.State,
		LastEventID: ps.LastEventID, LastEventType: ps.LastEventType, LastEventAt: ps.LastEventAt,
		PaidThrough: ps.PaidThrough, PaidEventAt: ps.PaidEventAt, Now: s.now(),
	})
}

func isUUID(s string) bool {
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

func isTrue(b *bool) bool { return b != nil && *b }

func unixPtr(sec *int64) *time.Time {
	if sec == nil || *sec == 0 {
		return nil
	}
	return unixTime(*sec)
}

func firstTime(ts ...*time.Time) *time.Time {
	for _, t := range ts {
		if t != nil {
			return t
		}
	}
	return nil
}

func timePtr(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}

func nullTime(t *time.Time) sql.NullTime {
	if t == nil {
		return sql.NullTime{}
	}
	return sql.NullTime{Time: t.UTC(), Valid: true}
}

func nullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}
