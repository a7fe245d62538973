package tollgatetest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tollgate/tollgate"
	"github.com/tollgate/tollgate/tollgatetest"
)

// TestTheKitDrivesAnAppEndToEnd: with the kit alone, a test signs a web event for a user,
// sends it to the app's handler, and reads the user's plan through the public types: the
// Plan and the Subscription that sold it, as /api/v1/me shows them.
func TestTheKitDrivesAnAppEndToEnd(t *testing.T) {
	idp, err := tollgatetest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	defer idp.Close()
	settings := tollgatetest.NewEnv(idp, map[string]string{"APP_ENV": "development", "PLANS_FILE": "../config/plans.yml"})
	app, err := tollgate.New(context.Background(), settings.Get, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	srv := httptest.NewServer(app.Handler())
	defer srv.Close()
	userID, token := idp.Token("kit@example.test")

	now := time.Now()
	event := fmt.Appendf(nil, `{"id":"evt_kit","object":"event","type":"customer.subscription.created","created":%d,
		"data":{"object":{"id":"sub_kit","object":"subscription","customer":"cus_kit","status":"active","created":%d,
		"metadata":{"user_id":%q},"items":{"data":[{"price":{"id":"price_1TESTmonthlyPro000001"},"current_period_end":%d}]}}}}`,
		now.Unix(), now.Unix(), userID, now.Add(30*24*time.Hour).Unix())
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/billing/webhooks/web", bytes.NewReader(event))
	req.Header.Set("Stripe-Signature", tollgatetest.SignWeb(event))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Tollgate-Outcome") != "applied" {
		t.Fatalf("signed web event: %d, outcome %q", resp.StatusCode, resp.Header.Get("Tollgate-Outcome"))
	}

	e, err := app.Entitlements(context.Background(), userID)
	if err != nil {
		t.Fatal(err)
	}
	var plan *tollgate.Plan = e.Plan()
	var sold *tollgate.Subscription = e.Governing()
	if !e.Subscribed() || plan == nil || plan.Key != "pro" || sold == nil || sold.Provider != "web" || !sold.Entitling(time.Now()) ||
		len(e.Subscriptions) != 1 || !e.Entitled("exports") {
		t.Fatalf("entitlements %+v, plan %+v, governing %+v", e, plan, sold)
	}
	if limit, ok := e.Limit("projects"); !ok || limit != 10 {
		t.Fatalf("projects limit %d %v", limit, ok)
	}

	req, _ = http.NewRequest(http.MethodGet, srv.URL+"/api/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var me struct {
		Billing struct{ Plan tollgate.Plan }
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&me) != nil || me.Billing.Plan != *plan {
		t.Fatalf("/api/v1/me: %d %+v, want plan %+v", resp.StatusCode, me, *plan)
	}
}
