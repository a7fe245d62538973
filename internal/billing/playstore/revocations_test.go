package playstore_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/playstore/playstoretest"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// A revocation is final for the period it took: Play still reporting the subscription
// cancelled but running, read after it, gives nothing back; a later paid order does. A
// revocation stored before tollgate kept what it took stays final.
func TestPlayRevocationIsFinalForItsPeriod(t *testing.T) {
	ahead := billingtest.Now.Add(20 * 24 * time.Hour)
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		g := playstoretest.Start(t)
		h := billingtest.New(t, d, billingtest.WithPlayStore(t, g))
		push := func(id string, typ int, token string, minutes int) {
			t.Helper()
			h.SetNow(billingtest.Now.Add(time.Duration(minutes) * time.Minute))
			body := playstoretest.Push(id, map[string]any{"packageName": billingtest.Bundle,
				"eventTimeMillis":          fmt.Sprint(h.Clock().UnixMilli()),
				"subscriptionNotification": map[string]any{"notificationType": typ, "purchaseToken": token}})
			if rec := h.SendPlay(g.PushToken(billingtest.PushClaims(), nil), body); rec.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", id, rec.Code, rec.Body)
			}
		}
		const purchased, renewed, canceled, revokedType = 4, 2, 3, 12
		refunded := "false refunded free " + billingtest.Stamp(billingtest.Now.Add(time.Minute))
		for i, token := range []string{"tok-final", "tok-old"} {
			user := fmt.Sprintf("00000000-0000-4000-8000-%012d", 960+i)
			g.SetPurchase(token, billingtest.PlayOrder("SUBSCRIPTION_STATE_ACTIVE", user, ahead, "GPA.96"+fmt.Sprint(i)))
			push("m-buy-"+token, purchased, token, 0)
			push("m-revoke-"+token, revokedType, token, 1)
			g.SetPurchase(token, billingtest.PlayOrder("SUBSCRIPTION_STATE_CANCELED", user, ahead, "GPA.96"+fmt.Sprint(i)))
			push("m-cancel-"+token, canceled, token, 2)
			if got := h.Answer(t, user); got != refunded {
				t.Fatalf("%s: the revoked period read again: %s, want %s", token, got, refunded)
			}
		}

		g.SetPurchase("tok-final", billingtest.PlayOrder("SUBSCRIPTION_STATE_ACTIVE", "00000000-0000-4000-8000-000000000960", ahead.Add(30*24*time.Hour), "GPA.960..0"))
		push("m-renew-tok-final", renewed, "tok-final", 3)
		if got, want := h.Answer(t, "00000000-0000-4000-8000-000000000960"), "true active pro "+billingtest.Stamp(ahead.Add(30*24*time.Hour)); got != want {
			t.Fatalf("a later paid order: %s, want %s", got, want)
		}

		// A revocation as stored before what it took was kept.
		var state string
		if err := d.QueryRow("select state from provider_subscriptions where provider_subscription_id = 'tok-old'").Scan(&state); err != nil {
			t.Fatal(err)
		}
		var fields map[string]any
		if err := json.Unmarshal([]byte(state), &fields); err != nil || fields["revoked"] == nil {
			t.Fatalf("the stored state %s: %v, want what the revocation took", state, err)
		}
		delete(fields, "revoked")
		old, _ := json.Marshal(fields)
		if _, err := d.Exec("update provider_subscriptions set state = $1 where provider_subscription_id = 'tok-old'", string(old)); err != nil {
			t.Fatal(err)
		}
		push("m-cancel-again-tok-old", canceled, "tok-old", 4)
		if got := h.Answer(t, "00000000-0000-4000-8000-000000000961"); got != refunded {
			t.Fatalf("an older revocation read again: %s, want %s", got, refunded)
		}
	})
}
