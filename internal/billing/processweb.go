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

const (
	webSubscriptionCreated = "customer.subscription.created"
	webSubscriptionUpdated = "customer.subscription.updated"
	webSubscriptionDeleted = "customer.subscription.deleted"
	webInvoicePaid         = "invoice.payment_succeeded"
)

// webSnapshot is what provider_subscriptions.state holds for a web subscription: the
// object of the last applied subscription event and that event's previous_attributes.
type webSnapshot struct {
	Object             json.RawMessage            `json:"object"`
	PreviousAttributes map[string]json.RawMessage `json:"previous_attributes,omitempty"`
}

// processWeb processes a web event: decoded, or else decoded here from body.
func (s *Service) processWeb(ctx context.Context, q *txn, eventID string, body []byte, decoded *webEvent) (string, error) {
	if decoded == nil {
		decoded = &webEvent{}
		if err := json.Unmarshal(body, decoded); err != nil {
			return "", permanent("web event: %v", jsonProblem(err))
		}
	}
	ev := *decoded
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
		if _, err := s.resolveWebCustomer(ctx, q, string(inv.Customer), inv.userID(), 0, sql.NullTime{}); err != nil {
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
	customer, err := s.resolveWebCustomer(ctx, q, string(sub.Customer), sub.userID(), ps.ID, nullTime(periodEnd))
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
// canonical status and access horizon (docs/billing.md, "Status mapping"). Times come from the events, never
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
// providerSubscriptionID and periodEnd are the canonical write that follows, if one does
// (else 0), for upsertCustomer.
func (s *Service) resolveWebCustomer(ctx context.Context, q *txn, webCustomerID, userID string, providerSubscriptionID int64, periodEnd sql.NullTime) (billingCustomer, error) {
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
	c, err := s.upsertCustomer(ctx, q, userID, providerSubscriptionID, periodEnd)
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
