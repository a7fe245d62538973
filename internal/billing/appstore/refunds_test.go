package appstore_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// A refund ends access at once and is final for the period it paid for; its reversal,
// ordered against it by signedDate, gives back exactly what it took; a later paid period
// gives access back; a refund of an earlier period leaves a later one alone — whatever
// order the notifications arrive in. Each change of the answer is one entitlements.changed.
func TestAppStoreRefunds(t *testing.T) {
	day := 24 * time.Hour
	e1, e2 := billingtest.Now.Add(30*day), billingtest.Now.Add(60*day)
	at := func(minutesAgo int) time.Time { return billingtest.Now.Add(-time.Duration(minutesAgo) * time.Minute) }
	type sent struct {
		typ, subtype string
		signed       time.Time
		expires      time.Time
	}
	subscribed := sent{"SUBSCRIBED", "INITIAL_BUY", at(5), e1}
	for i, tc := range []struct {
		name    string
		in      []sent // in the order they arrive
		want    string
		changes int // entitlements.changed events: one per change of the answer
	}{
		{"refund, then its reversal", []sent{subscribed, {"REFUND", "", at(3), e1}, {"REFUND_REVERSED", "", at(2), e1}},
			"true active pro " + billingtest.Stamp(e1), 3},
		{"the reversal arrives before the refund it reverses", []sent{subscribed, {"REFUND_REVERSED", "", at(2), e1}, {"REFUND", "", at(3), e1}},
			"true active pro " + billingtest.Stamp(e1), 1},
		{"a refund signed after a reversal stands", []sent{subscribed, {"REFUND_REVERSED", "", at(3), e1}, {"REFUND", "", at(2), e1}},
			"false refunded free " + billingtest.Stamp(at(2)), 2},
		{"cancelled before its refund, it comes back cancelled", []sent{subscribed, {"DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", at(4), e1},
			{"REFUND", "", at(3), e1}, {"REFUND_REVERSED", "", at(2), e1}}, "true cancelled pro " + billingtest.Stamp(e1), 4},
		{"a refund arriving before the renewal it follows", []sent{subscribed, {"REFUND", "", at(2), e2}, {"DID_RENEW", "", at(3), e2}},
			"false refunded free " + billingtest.Stamp(at(2)), 2},
		{"the refunded period heard again gives nothing back", []sent{subscribed, {"REFUND", "", at(3), e1},
			{"DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", at(1), e1}}, "false refunded free " + billingtest.Stamp(at(3)), 2},
		{"a later paid period gives access back", []sent{subscribed, {"REFUND", "", at(3), e1}, {"DID_RENEW", "", at(1), e2}},
			"true active pro " + billingtest.Stamp(e2), 3},
		{"a refund of an earlier period leaves the later one", []sent{subscribed, {"DID_RENEW", "", at(3), e2}, {"REFUND", "", at(1), e1}},
			"true active pro " + billingtest.Stamp(e2), 2},
		{"a later period signed before a refund of the earlier one", []sent{subscribed, {"REFUND", "", at(1), e1}, {"DID_RENEW", "", at(3), e2}},
			"true active pro " + billingtest.Stamp(e2), 3},
		{"a declined refund changes nothing", []sent{subscribed, {"REFUND_DECLINED", "", at(1), e1}},
			"true active pro " + billingtest.Stamp(e1), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dbtest.Engines(t, func(t *testing.T, d *db.DB) {
				chain := billingtest.NewChain(t)
				h := billingtest.New(t, d, billingtest.WithAppStore(t, chain), billingtest.WithOutbound)
				user := fmt.Sprintf("00000000-0000-4000-8000-%012d", 900+i)
				for j, s := range tc.in {
					n := billingtest.AppStoreNotification(fmt.Sprintf("refund-%d-%d", i, j), s.typ, s.subtype, "8100001", user, s.signed, s.expires)
					if rec := h.SendAppStore(chain, n); rec.Code != http.StatusOK {
						t.Fatalf("%s: %d %s", s.typ, rec.Code, rec.Body)
					}
				}
				if got := h.Answer(t, user); got != tc.want {
					t.Fatalf("%s, want %s", got, tc.want)
				}
				if got := h.CountRows("outbound_new_events where event_type = 'entitlements.changed'"); got != tc.changes {
					t.Fatalf("%d entitlements.changed events, want %d", got, tc.changes)
				}
			})
		})
	}
}
