package paddledev_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/paddle"
	"github.com/tollgate/tollgate/internal/billing/paddle/paddledev"
)

// The stand-in through tollgate's own client of Paddle's API, under a path as serve mounts
// it: subscriptions listed in order, page by page, by customer; a key required; a
// transaction and a portal session made with URLs a browser can open.
func TestTheStandInAnswersAsPaddle(t *testing.T) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	base := srv.URL + "/_dev/paddle"
	standIn := paddledev.New(base)
	standIn.MaxPerPage = 2
	mux := http.NewServeMux()
	mux.Handle("/_dev/paddle/", http.StripPrefix("/_dev/paddle", standIn.Handler()))
	srv.Config.Handler = mux
	for i := range 5 {
		customer := "ctm_a"
		if i%2 == 1 {
			customer = "ctm_b"
		}
		if err := standIn.Put(json.RawMessage(fmt.Sprintf(`{"id":"sub_%d","customer_id":%q,"status":"active"}`, i, customer))); err != nil {
			t.Fatal(err)
		}
	}
	if err := standIn.Put(json.RawMessage(`{"status":"active"}`)); err == nil {
		t.Fatal("a subscription without its id was taken")
	}
	api, err := paddle.NewAPI(paddle.APIConfig{Key: "pdl_sdbx_apikey_test", Base: base})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var ids []string
	for after, more := "", true; more; {
		page, err := api.Subscriptions(ctx, "", after)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range page.Subscriptions {
			var sub struct{ ID string }
			json.Unmarshal(raw, &sub)
			ids = append(ids, sub.ID)
		}
		after, more = page.Next, page.HasMore
	}
	if strings.Join(ids, ",") != "sub_0,sub_1,sub_2,sub_3,sub_4" || standIn.Reads() != 3 {
		t.Fatalf("listed %v in %d reads", ids, standIn.Reads())
	}
	if page, err := api.Subscriptions(ctx, "ctm_b", ""); err != nil || len(page.Subscriptions) != 2 || page.HasMore {
		t.Fatalf("customer ctm_b's: %d %t %v", len(page.Subscriptions), page.HasMore, err)
	}
	if resp, err := http.Get(base + "/subscriptions"); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("without a key: %v %v", resp, err)
	}

	store := api.WebStore()
	checkoutURL, err := store.CreateCheckout(ctx, billing.Purchase{Price: "pri_x", UserID: "user-1"})
	if err != nil || standIn.Transactions()[0].CustomData["user_id"] != "user-1" {
		t.Fatalf("checkout: %q %v %+v", checkoutURL, err, standIn.Transactions())
	}
	portalURL, err := store.CreatePortal(ctx, "ctm_a", "")
	if err != nil || portalURL != base+"/portal/ctm_a" {
		t.Fatalf("portal: %q %v", portalURL, err)
	}
	for _, u := range []string{checkoutURL, portalURL} {
		resp, err := http.Get(u) // a browser, without the key
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Development stand-in for Paddle") {
			t.Fatalf("%s: %d %s", u, resp.StatusCode, body)
		}
	}
}

func billingPurchase(price, user string) billing.Purchase {
	return billing.Purchase{Price: price, UserID: user}
}
