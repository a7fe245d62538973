package grant_test

import (
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/grant"
)

var (
	start = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	given = billing.Grant{ID: "g1", UserID: "00000000-0000-4000-8000-00000000c001", Plan: "pro", Starts: start,
		Ends: start.Add(30 * 24 * time.Hour), Reason: "bug", By: "cli:ops"}
)

// fold applies the events in order as the pipeline would and gives the facts.
func fold(t *testing.T, steps ...func() (string, billing.Grant, time.Time)) billing.Facts {
	t.Helper()
	a := grant.New()
	var stored billing.Stored
	for _, step := range steps {
		typ, g, at := step()
		ev, body, err := grant.Event(typ, g, at)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := a.Parse(body)
		if err != nil || parsed.ID != ev.ID {
			t.Fatalf("parse %s: %v %v", ev.ID, parsed.ID, err)
		}
		r, err := a.Read(parsed, body)
		if err != nil {
			t.Fatal(err)
		}
		state, _, err := a.Apply(r, stored)
		if err != nil {
			t.Fatal(err)
		}
		stored = billing.Stored{State: string(state), LastEventID: ev.ID, LastEventType: typ, LastEventAt: at}
	}
	f, err := a.Facts(stored)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func granted() (string, billing.Grant, time.Time) { return grant.EventGranted, given, start }

func revokedAt(at time.Time, reason string) func() (string, billing.Grant, time.Time) {
	return func() (string, billing.Grant, time.Time) {
		g := given
		g.RevokedBy, g.RevokeReason = "ops@example.com", reason
		return grant.EventRevoked, g, at
	}
}

func ended() (string, billing.Grant, time.Time) { return grant.EventEnded, given, given.Ends }

// The steps of a grant's life fold into the facts of its canonical row, whichever order
// they are applied in: the first revocation stands, and a replayed grant undoes nothing.
func TestStepsFold(t *testing.T) {
	day := start.Add(24 * time.Hour)
	for _, c := range []struct {
		name   string
		steps  []func() (string, billing.Grant, time.Time)
		status string
		end    time.Time
	}{
		{"granted", []func() (string, billing.Grant, time.Time){granted}, billing.StatusActive, given.Ends},
		{"revoked", []func() (string, billing.Grant, time.Time){granted, revokedAt(day, "done")}, billing.StatusExpired, day},
		{"ended", []func() (string, billing.Grant, time.Time){granted, ended}, billing.StatusExpired, given.Ends},
		{"revoked twice", []func() (string, billing.Grant, time.Time){granted, revokedAt(day, "first"), revokedAt(day.Add(time.Hour), "second")},
			billing.StatusExpired, day},
		{"granted replayed after its revocation", []func() (string, billing.Grant, time.Time){granted, revokedAt(day, "done"), granted},
			billing.StatusExpired, day},
		{"revoked after its end", []func() (string, billing.Grant, time.Time){granted, ended, revokedAt(given.Ends.Add(time.Hour), "late")},
			billing.StatusExpired, given.Ends},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := fold(t, c.steps...)
			if f.Status != c.status || f.PeriodEnd == nil || !f.PeriodEnd.Equal(c.end) || f.PlanKey != "pro" || f.UserID != given.UserID {
				t.Fatalf("facts %+v (end %v), want %s until %v", f, f.PeriodEnd, c.status, c.end)
			}
		})
	}
}

// A grant is shown active until its end and expired from then, recorded or not, and usage
// under it counts by calendar month, not by its end.
func TestAGrantInAPosition(t *testing.T) {
	end := given.Ends
	sub := billing.Subscription{Provider: billing.ProviderGrant, Status: billing.StatusActive, CurrentPeriodEnd: &end,
		Plan: billing.Plan{Key: "pro", ID: 2, Tier: 1}}
	plans := billing.Catalogue{Values: map[int64]map[string]any{2: {"projects": int64(10)}}}
	at := start.Add(time.Hour)
	e := billing.Position(given.UserID, at, []billing.Subscription{sub}, plans)
	if !e.Subscribed() || !e.UsagePeriodEnd().Equal(billing.MonthEnd(at)) {
		t.Fatalf("subscribed %t, usage until %v", e.Subscribed(), e.UsagePeriodEnd())
	}
	if v := billing.ViewOf(e, nil); *v.Status != billing.StatusActive {
		t.Fatalf("shown %s while it lasts", *v.Status)
	}
	after := billing.Position(given.UserID, end, []billing.Subscription{sub}, plans)
	if v := billing.ViewOf(after, nil); after.Subscribed() || *v.Status != billing.StatusExpired {
		t.Fatalf("at its end: subscribed %t, shown %s", after.Subscribed(), *v.Status)
	}
}

// Nothing outside reaches a grant: every request is refused, and a body that is not a
// grant's event is a bad body.
func TestNothingIsReceived(t *testing.T) {
	a := grant.New()
	if err := a.Verify(nil, []byte(`{}`), start); err == nil {
		t.Fatal("a request was verified")
	}
	for _, body := range []string{`{}`, `{"type":"grant.created"}`, `{"type":"refund","at":"2026-11-20T10:00:00Z","grant":{"id":"g"}}`, `[`} {
		if _, err := a.Parse([]byte(body)); billing.KindOf(err) != billing.KindInvalid {
			t.Errorf("%s: %v", body, err)
		}
	}
}
