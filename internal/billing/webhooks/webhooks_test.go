package webhooks_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

func TestWebhookResponses(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d)
		created := billingtest.Fixture(t, "web/customer.subscription.created.json")
		updated := billingtest.Fixture(t, "web/customer.subscription.updated.json")
		started := billingtest.Fixture(t, "mobile/subscription_started.json")
		now := billingtest.Now.Unix()
		sig := func(ts int64, body []byte) http.Header {
			return http.Header{"Web-Signature": {fmt.Sprintf("t=%d,v1=%s", ts, billingtest.WebSignature(billingtest.WebSecret, ts, body))}}
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
			{"web second v1 correct", "/billing/webhooks/web", updated, http.Header{"Web-Signature": {fmt.Sprintf("t=%d,v1=%s,v1=%s", now, billingtest.WebSignature("old secret", now, updated), billingtest.WebSignature(billingtest.WebSecret, now, updated))}}, 200, "", 1, ""},
			{"web both signature headers", "/billing/webhooks/web", stripeSigned, both, 401, "invalid-signature", 0, ""},
			{"web Web-Signature twice", "/billing/webhooks/web", stripeSigned, twice("Web-Signature"), 401, "invalid-signature", 0, ""},
			{"web Stripe-Signature twice", "/billing/webhooks/web", stripeSigned, twice("Stripe-Signature"), 401, "invalid-signature", 0, ""},
			{"web signed as Stripe signs", "/billing/webhooks/web", stripeSigned, http.Header{"Stripe-Signature": sig(now, stripeSigned)["Web-Signature"]}, 200, "", 1, ""},
			{"web no signature", "/billing/webhooks/web", created, nil, 401, "invalid-signature", 0, ""},
			{"web 301 s old", "/billing/webhooks/web", created, sig(now-301, created), 401, "invalid-signature", 0, ""},
			{"web 301 s in the future", "/billing/webhooks/web", created, sig(now+301, created), 401, "invalid-signature", 0, ""},
			{"web altered body", "/billing/webhooks/web", append([]byte(" "), created...), sig(now, created), 401, "invalid-signature", 0, ""},
			{"web v0 only", "/billing/webhooks/web", created, http.Header{"Web-Signature": {fmt.Sprintf("t=%d,v0=%s", now, billingtest.WebSignature(billingtest.WebSecret, now, created))}}, 401, "invalid-signature", 0, ""},
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
		h.Post("/billing/webhooks/web", created, http.Header{"Web-Signature": {fmt.Sprintf("t=%d,v1=%s", ts, billingtest.WebSignature("", ts, created))}}),
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
