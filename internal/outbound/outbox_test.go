package outbound

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tollgate/tollgate/internal/outbound/outboundtest"
)

func TestSignatureVerifiesWithTheStandardWebhooksLibrary(t *testing.T) {
	verifier, err := standardwebhooks.NewWebhook(outboundtest.Secret)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"type":"entitlements.changed","data":{"user_id":"u"}}`)
	now := time.Now()
	headers := func(body []byte, id string) http.Header {
		return http.Header{
			"Webhook-Id":        {id},
			"Webhook-Timestamp": {strconv.FormatInt(now.Unix(), 10)},
			"Webhook-Signature": {Sign(outboundtest.Key(), "msg_1", now, body)},
		}
	}
	if err := verifier.Verify(body, headers(body, "msg_1")); err != nil {
		t.Fatalf("a signed delivery does not verify: %v", err)
	}
	if err := verifier.Verify([]byte(`{"type":"entitlements.changed","data":{"user_id":"v"}}`), headers(body, "msg_1")); err == nil {
		t.Fatal("a changed body verifies")
	}
	if err := verifier.Verify(body, headers(body, "msg_2")); err == nil {
		t.Fatal("another webhook-id verifies")
	}
}

func TestMessageIDsAreUniqueAndPrefixed(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newMessageID()
		if len(id) != len("msg_")+32 || id[:4] != "msg_" || seen[id] {
			t.Fatalf("message id %q (seen before: %t)", id, seen[id])
		}
		seen[id] = true
	}
}
