package stripe_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

func TestVerifyWebSignature(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	body := []byte(`{"id":"evt_1","type":"customer.subscription.updated"}`)
	ts := now.Unix()
	good := billingtest.WebSignature(billingtest.WebSecret, ts, body)
	wrong := billingtest.WebSignature("another secret", ts, body)
	altered := append([]byte{}, body...)
	altered[10] ^= 1

	tests := []struct {
		name   string
		secret string
		header string
		body   []byte
		ok     bool
	}{
		{"valid", billingtest.WebSecret, fmt.Sprintf("t=%d,v1=%s", ts, good), body, true},
		{"second v1 correct", billingtest.WebSecret, fmt.Sprintf("t=%d,v1=%s,v1=%s", ts, wrong, good), body, true},
		{"v0 ignored beside a good v1", billingtest.WebSecret, fmt.Sprintf("t=%d,v0=abc,v1=%s", ts, good), body, true},
		{"300 s old", billingtest.WebSecret, fmt.Sprintf("t=%d,v1=%s", ts-300, billingtest.WebSignature(billingtest.WebSecret, ts-300, body)), body, true},
		{"301 s old", billingtest.WebSecret, fmt.Sprintf("t=%d,v1=%s", ts-301, billingtest.WebSignature(billingtest.WebSecret, ts-301, body)), body, false},
		{"301 s in the future", billingtest.WebSecret, fmt.Sprintf("t=%d,v1=%s", ts+301, billingtest.WebSignature(billingtest.WebSecret, ts+301, body)), body, false},
		{"one body byte altered", billingtest.WebSecret, fmt.Sprintf("t=%d,v1=%s", ts, good), altered, false},
		{"v0 only", billingtest.WebSecret, fmt.Sprintf("t=%d,v0=%s", ts, good), body, false},
		{"wrong secret", billingtest.WebSecret, fmt.Sprintf("t=%d,v1=%s", ts, wrong), body, false},
		{"blank secret, signed with blank", "", fmt.Sprintf("t=%d,v1=%s", ts, billingtest.WebSignature("", ts, body)), body, false},
		{"missing header", billingtest.WebSecret, "", body, false},
		{"no timestamp", billingtest.WebSecret, "v1=" + good, body, false},
		{"timestamp not a number", billingtest.WebSecret, "t=abc,v1=" + good, body, false},
		{"two timestamps", billingtest.WebSecret, fmt.Sprintf("t=%d,t=%d,v1=%s", ts, ts, good), body, false},
		{"timestamp of another signature", billingtest.WebSecret, fmt.Sprintf("t=%d,v1=%s", ts-1, good), body, false},
		{"garbage", billingtest.WebSecret, "garbage", body, false},
		{"truncated v1", billingtest.WebSecret, fmt.Sprintf("t=%d,v1=%s", ts, good[:40]), body, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := stripe.New(tc.secret).Verify(http.Header{"Web-Signature": {tc.header}}, tc.body, now)
			if (err == nil) != tc.ok {
				t.Fatalf("verify = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// TestStripeSignatures: a delivery signed by Stripe's own SDK, in the header Stripe sends,
// is stored and applied; and what tollgate signs (webhook send) passes the SDK's check.
func TestStripeSignatures(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		body := billingtest.Fixture(t, "web/customer.subscription.updated.json")
		signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: billingtest.WebSecret, Timestamp: h.Clock()})
		rec := h.Post("/billing/webhooks/web", body, http.Header{stripe.HeaderStripeSignature: {signed.Header}})
		if rec.Code != http.StatusOK {
			t.Fatalf("Stripe-signed delivery: %d %s", rec.Code, rec.Body)
		}
		if got := h.Canonical(billing.ProviderWeb, "sub_1TESTa1B2c3D4e5F6g7H8i9"); got == nil || got.Status != billing.StatusActive || got.Plan != "pro" {
			t.Fatalf("Stripe-signed delivery not applied: %+v", got)
		}
	})
	body := billingtest.Fixture(t, "web/customer.subscription.created.json")
	if err := webhook.ValidatePayload(body, stripe.SignHeader(billingtest.WebSecret, time.Now(), body), billingtest.WebSecret); err != nil {
		t.Fatalf("Stripe's SDK refuses tollgate's signature: %v", err)
	}
}
