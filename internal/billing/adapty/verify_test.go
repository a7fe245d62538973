package adapty_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/adapty"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
)

func TestVerifyMobileAuthorization(t *testing.T) {
	tests := []struct {
		name, secret, header string
		ok                   bool
	}{
		{"match", "s3cret", "s3cret", true},
		{"mismatch", "s3cret", "s3cre7", false},
		{"prefix of the secret", "s3cret", "s3cre", false},
		{"secret plus more", "s3cret", "s3cret ", false},
		{"bearer form is not the secret", "s3cret", "Bearer s3cret", false},
		{"blank header", "s3cret", "", false},
		{"blank secret and blank header", "", "", false},
		{"blank secret", "", "anything", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := adapty.New(tc.secret, nil).Verify(http.Header{"Authorization": {tc.header}}, nil, time.Time{}); (err == nil) != tc.ok {
				t.Fatalf("verify = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// The synthetic id is recomputed here from the documented recipe, not from the code.
func TestMobileSyntheticEventID(t *testing.T) {
	digest := func(parts ...string) string {
		sum := sha256.Sum256([]byte(strings.Join(parts, "|")))
		return "mobile_synth_" + hex.EncodeToString(sum[:])[:32]
	}
	started := billingtest.Fixture(t, "mobile/subscription_started.json")
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{"transaction_id inside event_properties", started,
			digest("subscription_started", "2026-10-01T12:00:04.118000+0000", "3f1c2a9e-7b4d-4e21-9a6f-0c5d8e2b1a47", "2000000987654321")},
		{"transaction_id at top level wins", billingtest.Edit(t, started, func(m map[string]any) { m["transaction_id"] = "top-level-tx" }),
			digest("subscription_started", "2026-10-01T12:00:04.118000+0000", "3f1c2a9e-7b4d-4e21-9a6f-0c5d8e2b1a47", "top-level-tx")},
		{"no transaction id at all", []byte(`{"event_type":"subscription_expired","event_datetime":"2026-10-01T00:00:00.000000+0000","profile_id":"p1"}`),
			digest("subscription_expired", "2026-10-01T00:00:00.000000+0000", "p1", "")},
		{"explicit event_id", []byte(`{"event_id":"ev-42","event_type":"subscription_renewed"}`), "ev-42"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mobile := adapty.New(billingtest.MobileSecret, nil)
			env, err := mobile.Parse(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if env.ID != tc.want {
				t.Fatalf("id %s, want %s", env.ID, tc.want)
			}
			again, _ := mobile.Parse(tc.body)
			if again.ID != env.ID {
				t.Fatal("the same event gave two ids")
			}
		})
	}
}
