package stripe

// The web provider's rules: which event supersedes which, and what a subscription's
// state means canonically.

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// supersedes says whether an incoming subscription event replaces the stored snapshot.
// Later events win. Within one second, which is common (a checkout emits created and
// updated together), a created never replaces anything, a deleted always does, and an
// updated applies unless the stored snapshot is provably its successor. A deleted snapshot
// is final: only another deleted replaces it.
func supersedes(eventType string, at time.Time, incoming snapshot, ps billing.Stored) bool {
	if !ps.HasState() {
		return true
	}
	stored := ps.LastEventType
	switch {
	case eventType == subscriptionDeleted:
		return true
	case stored == subscriptionDeleted, eventType == subscriptionCreated:
		return false
	case at.After(ps.LastEventAt):
		return true
	case at.Before(ps.LastEventAt):
		return false
	}
	// An updated in the same second as the stored created or updated.
	if stored == subscriptionCreated {
		return true
	}
	var current snapshot
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

// snapshotOrder places a subscription object read from the API by the rule for reads
// (billing.BySnapshot): a deletion is final.
func snapshotOrder(r billing.Reading, object json.RawMessage, stored billing.Stored) billing.Order {
	return billing.BySnapshot(r, stored, stored.LastEventType == subscriptionDeleted, func() bool { return sameObject(stored.State, object) })
}

// sameObject says whether a stored snapshot holds this object, compared as JSON values.
func sameObject(state string, object json.RawMessage) bool {
	var stored snapshot
	var a, b any
	return json.Unmarshal([]byte(state), &stored) == nil && json.Unmarshal(stored.Object, &a) == nil &&
		json.Unmarshal(object, &b) == nil && reflect.DeepEqual(a, b)
}

// canonical maps a web subscription snapshot, and the payments seen for it, to the
// canonical status and access horizon (docs/billing.md, "Status mapping"). Times come from the events, never
// from the clock, so the result does not depend on when or in which order events arrive.
func canonical(sub subscription, snapshotAt time.Time, paidThrough, paidAt *time.Time) (string, *time.Time, error) {
	end := sub.periodEnd()
	var status string
	var horizon *time.Time
	switch sub.Status {
	case "trialing":
		status, horizon = billing.StatusTrialing, billing.FirstTime(unixPtr(sub.TrialEnd), end)
	case "active":
		if sub.CancelAtPeriodEnd || sub.CancelAt != nil {
			status, horizon = billing.StatusCancelled, billing.FirstTime(unixPtr(sub.CancelAt), end)
		} else {
			status, horizon = billing.StatusActive, end
		}
	case "past_due":
		status, horizon = billing.StatusPastDue, end
	case "incomplete":
		// Awaiting the first payment: present but never entitling until it is paid.
		start := sub.StartDate
		if start == 0 {
			start = sub.Created
		}
		status, horizon = billing.StatusPastDue, billing.FirstTime(unixPtr(&start), &snapshotAt)
	case "incomplete_expired", "unpaid", "paused":
		status, horizon = billing.StatusExpired, &snapshotAt
	case "canceled":
		status, horizon = billing.StatusExpired, billing.FirstTime(unixPtr(sub.EndedAt), unixPtr(sub.CanceledAt), &snapshotAt)
	default:
		return "", nil, billing.Invalidf("subscription %s has unknown status %q", sub.ID, sub.Status)
	}
	if paidThrough != nil && status != billing.StatusExpired {
		if status == billing.StatusPastDue && !paidAt.Before(snapshotAt) {
			status = billing.StatusActive
		}
		if horizon != nil && paidThrough.After(*horizon) {
			horizon = paidThrough
		}
	}
	return status, horizon, nil
}

func unixPtr(sec *int64) *time.Time {
	if sec == nil || *sec == 0 {
		return nil
	}
	return billing.UnixTime(*sec)
}
