package webhooks_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/adapty"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// independentSignature computes the web provider's v1 the way its documentation describes,
// without any of the code under test.
func independentSignature(secret string, t int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%d.%s", t, body)
	return hex.EncodeToString(mac.Sum(nil))
}

func TestVerifyWebSignature(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	body := []byte(`{"id":"evt_1","type":"customer.subscription.updated"}`)
	ts := now.Unix()
	good := independentSignature(billingtest.WebSecret, ts, body)
	wrong := independentSignature("another secret", ts, body)
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
		{"300 s old", billingtest.WebSecret, fmt.Sprintf("t=%d,v1=%s", ts-300, independentSignature(billingtest.WebSecret, ts-300, body)), body, true},
		{"301 s old", billingtest.WebSecret, fmt.Sprintf("t=%d,v1=%s", ts-301, independentSignature(billingtest.WebSecret, ts-301, body)), body, false},
		{"301 s in the future", billingtest.WebSecret, fmt.Sprintf("t=%d,v1=%s", ts+301, independentSignature(billingtest.WebSecret, ts+301, body)), body, false},
		{"one body byte altered", billingtest.WebSecret, fmt.Sprintf("t=%d,v1=%s", ts, good), altered, false},
		{"v0 only", billingtest.WebSecret, fmt.Sprintf("t=%d,v0=%s", ts, good), body, false},
		{"wrong secret", billingtest.WebSecret, fmt.Sprintf("t=%d,v1=%s", ts, wrong), body, false},
		{"blank secret, signed with blank", "", fmt.Sprintf("t=%d,v1=%s", ts, independentSignature("", ts, body)), body, false},
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

func TestWebhookResponses(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		created := billingtest.Fixture(t, "web/customer.subscription.created.json")
		updated := billingtest.Fixture(t, "web/customer.subscription.updated.json")
		started := billingtest.Fixture(t, "mobile/subscription_started.json")
		now := billingtest.Now.Unix()
		sig := func(ts int64, body []byte) http.Header {
			return http.Header{"Web-Signature": {fmt.Sprintf("t=%d,v1=%s", ts, independentSignature(billingtest.WebSecret, ts, body))}}
		}
		notJSON := []byte(`{"id": "evt_1", "type": `)
		stripeSigned := billingtest.Edit(t, updated, func(m map[string]any) { m["id"] = "evt_stripe_signed" })
		both := http.Header{"Web-Signature": sig(now, stripeSigned)["Web-Signature"], "Stripe-Signature": sig(now, stripeSigned)["Web-Signature"]}
		twice := func(name string) http.Header {
			v := sig(now, stripeSigned)["Web-Signature"][0]
			return http.Header{name: {v, v}}
		}

		tests := []struct {
			name     string
			path     string
			body     []byte
			header   http.Header
			status   int
			problem  string // expected problem type suffix, "" for a success body
			newRows  int
			bodyHint string
		}{
			{"web valid", "/billing/webhooks/web", created, sig(now, created), 200, "", 1, ""},
			{"web second v1 correct", "/billing/webhooks/web", updated, http.Header{"Web-Signature": {fmt.Sprintf("t=%d,v1=%s,v1=%s", now, independentSignature("old secret", now, updated), independentSignature(billingtest.WebSecret, now, updated))}}, 200, "", 1, ""},
			{"web both signature headers", "/billing/webhooks/web", stripeSigned, both, 401, "invalid-signature", 0, ""},
			{"web Web-Signature twice", "/billing/webhooks/web", stripeSigned, twice("Web-Signature"), 401, "invalid-signature", 0, ""},
			{"web Stripe-Signature twice", "/billing/webhooks/web", stripeSigned, twice("Stripe-Signature"), 401, "invalid-signature", 0, ""},
			{"web signed as Stripe signs", "/billing/webhooks/web", stripeSigned, http.Header{"Stripe-Signature": sig(now, stripeSigned)["Web-Signature"]}, 200, "", 1, ""},
			{"web no signature", "/billing/webhooks/web", created, nil, 401, "invalid-signature", 0, ""},
			{"web 301 s old", "/billing/webhooks/web", created, sig(now-301, created), 401, "invalid-signature", 0, ""},
			{"web 301 s in the future", "/billing/webhooks/web", created, sig(now+301, created), 401, "invalid-signature", 0, ""},
			{"web altered body", "/billing/webhooks/web", append([]byte(" "), created...), sig(now, created), 401, "invalid-signature", 0, ""},
			{"web v0 only", "/billing/webhooks/web", created, http.Header{"Web-Signature": {fmt.Sprintf("t=%d,v0=%s", now, independentSignature(billingtest.WebSecret, now, created))}}, 401, "invalid-signature", 0, ""},
			{"web signed but not JSON", "/billing/webhooks/web", notJSON, sig(now, notJSON), 400, "invalid-body", 0, ""},
			{"web signed JSON array", "/billing/webhooks/web", []byte(`[1]`), sig(now, []byte(`[1]`)), 400, "invalid-body", 0, ""},
			{"web signed without id", "/billing/webhooks/web", []byte(`{"type":"x"}`), sig(now, []byte(`{"type":"x"}`)), 400, "invalid-body", 0, `has no \"id\"`},
			{"web NUL escape in body", "/billing/webhooks/web", []byte(`{"id":"evt_nul","type":"a\u0000b"}`), sig(now, []byte(`{"id":"evt_nul","type":"a\u0000b"}`)), 200, "", 1, ""},
			{"web NUL in the event id", "/billing/webhooks/web", []byte(`{"id":"evt_a\u0000","type":"x"}`), sig(now, []byte(`{"id":"evt_a\u0000","type":"x"}`)), 400, "invalid-body", 0, "control character"},
			{"web lone surrogate in the event id", "/billing/webhooks/web", []byte(`{"id":"evt_a\ud800","type":"x"}`), sig(now, []byte(`{"id":"evt_a\ud800","type":"x"}`)), 400, "invalid-body", 0, "control character"},
			{"web tab in the event id", "/billing/webhooks/web", []byte(`{"id":"evt_a\tb","type":"x"}`), sig(now, []byte(`{"id":"evt_a\tb","type":"x"}`)), 400, "invalid-body", 0, "control character"},
			{"mobile NUL in the event id", "/billing/webhooks/mobile", []byte(`{"event_id":"m\u0000","event_type":"subscription_started","profile_id":"p"}`), http.Header{"Authorization": {billingtest.MobileSecret}}, 400, "invalid-body", 0, "control character"},
			{"web invalid UTF-8", "/billing/webhooks/web", []byte("{\"id\":\"evt_utf8\",\"type\":\"a\xffb\"}"), sig(now, []byte("{\"id\":\"evt_utf8\",\"type\":\"a\xffb\"}")), 400, "invalid-body", 0, "UTF-8"},
			{"web unsupported type stored", "/billing/webhooks/web", []byte(`{"id":"evt_other","type":"charge.refunded","created":1}`), sig(now, []byte(`{"id":"evt_other","type":"charge.refunded","created":1}`)), 200, "", 1, ""},
			{"web body too large", "/billing/webhooks/web", []byte(`{"id":"big","pad":"` + strings.Repeat("x", 1<<20) + `"}`), nil, 413, "body-too-large", 0, ""},
			{"mobile valid", "/billing/webhooks/mobile", started, http.Header{"Authorization": {billingtest.MobileSecret}}, 200, "", 1, ""},
			{"mobile wrong secret", "/billing/webhooks/mobile", started, http.Header{"Authorization": {"nope"}}, 401, "invalid-signature", 0, ""},
			{"mobile no authorization", "/billing/webhooks/mobile", started, nil, 401, "invalid-signature", 0, ""},
			{"mobile authorization twice", "/billing/webhooks/mobile", started, http.Header{"Authorization": {billingtest.MobileSecret, "other"}}, 401, "invalid-signature", 0, ""},
			{"mobile authorization twice, same value", "/billing/webhooks/mobile", started, http.Header{"Authorization": {billingtest.MobileSecret, billingtest.MobileSecret}}, 401, "invalid-signature", 0, ""},
			{"mobile not JSON", "/billing/webhooks/mobile", notJSON, http.Header{"Authorization": {billingtest.MobileSecret}}, 400, "invalid-body", 0, ""},
			{"mobile invalid UTF-8", "/billing/webhooks/mobile", []byte("{\"event_type\":\"subscription_started\",\"profile_id\":\"\xc3\x28\"}"), http.Header{"Authorization": {billingtest.MobileSecret}}, 400, "invalid-body", 0, "UTF-8"},
			{"mobile set-up check", "/billing/webhooks/mobile", []byte(`{}`), http.Header{"Authorization": {billingtest.MobileSecret}}, 200, "", 0, ""},
			{"mobile set-up check echo", "/billing/webhooks/mobile", []byte(`{"adapty_check":"abc123"}`), http.Header{"Authorization": {billingtest.MobileSecret}}, 200, "", 0, `"adapty_check_response":"abc123"`},
			{"mobile set-up check unauthorised", "/billing/webhooks/mobile", []byte(`{}`), nil, 401, "invalid-signature", 0, ""},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				before := h.CountEvents()
				r := h.Post(tc.path, tc.body, tc.header)
				if r.Code != tc.status {
					t.Fatalf("status %d, want %d: %s", r.Code, tc.status, r.Body)
				}
				if got := h.CountEvents() - before; got != tc.newRows {
					t.Fatalf("%d new provider_events rows, want %d", got, tc.newRows)
				}
				ct := r.Header().Get("Content-Type")
				switch {
				case tc.problem != "":
					var p struct{ Type, Title, Detail string }
					if ct != "application/problem+json" || json.Unmarshal(r.Body.Bytes(), &p) != nil || !strings.HasSuffix(p.Type, "/"+tc.problem) {
						t.Fatalf("want problem %s, got %s %s", tc.problem, ct, r.Body)
					}
				case tc.status == 200:
					var ok struct{ Received bool }
					if json.Unmarshal(r.Body.Bytes(), &ok) != nil || !ok.Received {
						t.Fatalf("want received=true, got %s", r.Body)
					}
				}
				if tc.bodyHint != "" && !strings.Contains(r.Body.String(), tc.bodyHint) {
					t.Fatalf("body %s lacks %q", r.Body, tc.bodyHint)
				}
				if strings.Contains(r.Body.String(), billingtest.WebSecret) || strings.Contains(r.Body.String(), billingtest.MobileSecret) {
					t.Fatal("a secret reached the response body")
				}
			})
		}
		if logs := h.Logs.String(); strings.Contains(logs, "user42@example.test") || strings.Contains(logs, billingtest.WebSecret) || strings.Contains(logs, billingtest.MobileSecret) {
			t.Fatal("a raw body or a secret reached the log")
		}
	})
}

func TestBlankSecretsNeverVerify(t *testing.T) {
	h := billingtest.New(t, dbtest.SQLite(t), func(o *billingtest.Options) { o.WebSecret, o.MobileSecret = "", "" })
	created := billingtest.Fixture(t, "web/customer.subscription.created.json")
	ts := billingtest.Now.Unix()
	attempts := []*httptest.ResponseRecorder{
		h.Post("/billing/webhooks/web", created, http.Header{"Web-Signature": {fmt.Sprintf("t=%d,v1=%s", ts, independentSignature("", ts, created))}}),
		h.Post("/billing/webhooks/web", created, nil),
		h.Post("/billing/webhooks/mobile", billingtest.Fixture(t, "mobile/subscription_started.json"), http.Header{"Authorization": {""}}),
		h.Post("/billing/webhooks/mobile", billingtest.Fixture(t, "mobile/subscription_started.json"), nil),
	}
	for i, rec := range attempts {
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("attempt %d with a blank secret: %d", i, rec.Code)
		}
	}
	if n := h.CountEvents(); n != 0 {
		t.Fatalf("%d rows stored with blank secrets", n)
	}
}

func TestWebRouteAbsentInSyncEngineMode(t *testing.T) {
	h := billingtest.New(t, dbtest.SQLite(t), billingtest.WithoutWebRoute)
	created := billingtest.Fixture(t, "web/customer.subscription.created.json")
	if rec := h.SendWeb(created); rec.Code != http.StatusNotFound {
		t.Fatalf("web webhook in sync_engine mode: %d, want 404", rec.Code)
	}
	h.MustSend(billing.ProviderMobile, billingtest.Fixture(t, "mobile/subscription_started.json"))
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

func TestRepeatDeliveryKeepsReceivedAt(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		started := billingtest.Fixture(t, "mobile/subscription_started.json")
		h.MustSend(billing.ProviderMobile, started)
		first := h.Event(t, billing.ProviderMobile, "mobile_synth_b263629dc986907d465c3431227b596f")

		h.SetNow(billingtest.Now.Add(90 * time.Second))
		changed := billingtest.Edit(t, started, func(m map[string]any) { m["email"] = "changed@example.test" })
		h.MustSend(billing.ProviderMobile, changed)
		second := h.Event(t, billing.ProviderMobile, "mobile_synth_b263629dc986907d465c3431227b596f")

		if h.CountEvents() != 1 {
			t.Fatalf("%d rows after a repeat, want 1", h.CountEvents())
		}
		if !second.ReceivedAt.Equal(first.ReceivedAt) {
			t.Fatalf("received_at moved from %v to %v", first.ReceivedAt, second.ReceivedAt)
		}
		if !second.ProcessedAt.After(first.ProcessedAt) {
			t.Fatalf("processed_at not rewritten: %v then %v", first.ProcessedAt, second.ProcessedAt)
		}
		if !strings.Contains(string(second.Payload), "changed@example.test") {
			t.Fatal("payload not rewritten by the repeat")
		}
	})
}

func TestConcurrentDeliveriesOfOneEvent(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		bodies := map[string][]byte{
			billing.ProviderWeb:    billingtest.Fixture(t, "web/customer.subscription.updated.json"),
			billing.ProviderMobile: billingtest.Fixture(t, "mobile/subscription_started.json"),
		}
		for provider, body := range bodies {
			var wg sync.WaitGroup
			codes := make([]int, 50)
			for i := range codes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if provider == billing.ProviderWeb {
						codes[i] = h.SendWeb(body).Code
					} else {
						codes[i] = h.SendMobile(body).Code
					}
				}()
			}
			wg.Wait()
			for i, c := range codes {
				if c != http.StatusOK {
					t.Fatalf("%s delivery %d answered %d", provider, i, c)
				}
			}
		}
		if n := h.CountEvents(); n != 2 {
			t.Fatalf("%d provider_events rows after 2×50 deliveries, want 2", n)
		}
		var subs int
		if err := d.QueryRow("select count(*) from subscriptions").Scan(&subs); err != nil {
			t.Fatal(err)
		}
		if subs != 2 {
			t.Fatalf("%d canonical subscriptions, want 2", subs)
		}
	})
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

// TestEventIDsAreStrings: an id that is missing, not a string, blank or too long is refused
// with a 400 naming the field, and nothing is stored.
func TestEventIDsAreStrings(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		long := `"` + strings.Repeat("e", 256) + `"`
		for _, tc := range []struct {
			provider, id, field string
		}{
			{billing.ProviderWeb, "", "id"}, {billing.ProviderWeb, `12345`, "id"}, {billing.ProviderWeb, `null`, "id"}, {billing.ProviderWeb, `""`, "id"},
			{billing.ProviderWeb, `"   "`, "id"}, {billing.ProviderWeb, long, "id"}, {billing.ProviderWeb, `{"a":1}`, "id"},
			{billing.ProviderMobile, `12345`, "event_id"}, {billing.ProviderMobile, `"  "`, "event_id"}, {billing.ProviderMobile, long, "event_id"},
		} {
			field := `"` + tc.field + `":` + tc.id + `,`
			if tc.id == "" {
				field = ""
			}
			var body []byte
			var rec *httptest.ResponseRecorder
			if tc.provider == billing.ProviderWeb {
				body = []byte(`{` + field + `"type":"customer.subscription.updated","created":1790856000,"data":{"object":{}}}`)
				rec = h.SendWeb(body)
			} else {
				body = []byte(`{` + field + `"event_type":"subscription_started","event_datetime":"2026-10-01T12:00:04.118000+0000","profile_id":"p"}`)
				rec = h.SendMobile(body)
			}
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `\"`+tc.field+`\"`) {
				t.Errorf("%s %s=%s: %d %s", tc.provider, tc.field, tc.id, rec.Code, rec.Body)
			}
		}
		if n := h.CountEvents(); n != 0 {
			t.Fatalf("%d events stored with bad ids", n)
		}
		// A mobile event without event_id (or with null) gets its synthetic id.
		h.MustSend(billing.ProviderMobile, []byte(`{"event_id":null,"event_type":"other","event_datetime":"2026-10-01T12:00:04.118000+0000","profile_id":"p"}`))
		if n := h.CountEvents(); n != 1 {
			t.Fatalf("mobile event with a null event_id: %d rows", n)
		}
	})
}

// TestPoisonBodiesAreStoredAlike: JSON that Postgres jsonb refuses as sent (\u0000, lone
// surrogate escapes) is stored with U+FFFD in their place, processed and answered 200, on
// both engines; an escaped backslash before "u0000" and a proper surrogate pair stay as sent.
func TestPoisonBodiesAreStoredAlike(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		const note = `"a\u0000b\ud800c\udc00d\ud83d\ude00e\\u0000f\ud800"`
		withNote := func(name string) []byte { // a top-level "note" first, as sent: no re-encoding
			return bytes.Replace(billingtest.Fixture(t, name), []byte(`{`), []byte(`{"note": `+note+`, `), 1)
		}
		web, mobile := withNote("web/customer.subscription.updated.json"), withNote("mobile/subscription_started.json")
		h.MustSend(billing.ProviderWeb, web)
		h.MustSend(billing.ProviderMobile, mobile)
		want := "a\uFFFDb\uFFFDc\uFFFDd\U0001F600e\\u0000f\uFFFD"
		var payloads []string
		rows, err := d.Query("select payload from provider_events order by provider")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var p string
			rows.Scan(&p)
			payloads = append(payloads, p)
		}
		rows.Close()
		if len(payloads) != 2 {
			t.Fatalf("%d events stored, want 2", len(payloads))
		}
		for _, p := range payloads {
			var m struct{ Note string }
			if err := json.Unmarshal([]byte(p), &m); err != nil || m.Note != want {
				t.Errorf("stored note %q (%v), want %q", m.Note, err, want)
			}
		}
		if got := h.Canonical(billing.ProviderWeb, "sub_1TESTa1B2c3D4e5F6g7H8i9"); got == nil || got.Status != billing.StatusActive {
			t.Fatalf("the web event was not processed: %+v", got)
		}
	})
}
