package billing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

func addFixtureSeeds(f *testing.F, dir string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzParseWebSignature(f *testing.F) {
	for _, seed := range []string{
		"t=1790000000,v1=" + strings.Repeat("ab", 32),
		"t=1790000000,v1=" + strings.Repeat("ab", 32) + ",v1=00,v0=zz",
		"t=,v1=", "t=1,t=2", "v1=", ",,,", "t=-5,v1=" + strings.Repeat("0", 64), "t=99999999999999999999,v1=x",
	} {
		f.Add(seed)
	}
	now := time.Unix(1790000000, 0)
	body := []byte(`{"id":"evt"}`)
	f.Fuzz(func(t *testing.T, header string) {
		sig, err := parseWebSignature(header)
		if err == nil && (sig.timestamp <= 0 || len(sig.v1) == 0) {
			t.Fatalf("accepted %q without a timestamp or a v1", header)
		}
		for _, mac := range sig.v1 {
			if len(mac) != 32 {
				t.Fatalf("v1 of %d bytes accepted", len(mac))
			}
		}
		// Nothing but the real signature may verify.
		if verifyWebSignature(testWebSecret, header, body, now) == nil &&
			!strings.Contains(header, SignWebHeader(testWebSecret, time.Unix(sig.timestamp, 0), body)[len("t=1790000000,"):]) {
			t.Fatalf("forged header %q verified", header)
		}
	})
}

func FuzzEventID(f *testing.F) {
	addFixtureSeeds(f, "mobile")
	addFixtureSeeds(f, "web")
	f.Add([]byte(`{"event_id":12,"event_type":null}`))
	f.Add([]byte(`{"id":"evt_\u0000","object":"event","type":"x","data":{}}`))
	f.Add([]byte(`{"event_properties":"x","transaction_id":{"a":1}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		top, err := decodeTop(body)
		if err != nil {
			return
		}
		for _, derive := range []func(map[string]json.RawMessage) (envelope, error){webEnvelope, mobileEnvelope} {
			a, errA := derive(top)
			b, errB := derive(top)
			if a != b || (errA == nil) != (errB == nil) {
				t.Fatal("event id derivation is not deterministic")
			}
			if errA == nil && (strings.TrimSpace(a.ID) == "" || len(a.ID) > maxEventIDLen ||
				strings.ContainsFunc(a.ID, func(r rune) bool { return unicode.IsControl(r) || r == utf8.RuneError })) {
				t.Fatalf("accepted event id %q", a.ID)
			}
		}
		if m, err := mobileEnvelope(top); err == nil && strings.HasPrefix(m.ID, "mobile_synth_") && len(m.ID) != len("mobile_synth_")+32 {
			t.Fatalf("synthetic id %q has the wrong length", m.ID)
		}
	})
}

// FuzzStorableJSON: for valid JSON, the storable form is valid JSON that decodes to the same
// values with NUL read as U+FFFD (Go's decoder already reads lone surrogates so), holds no
// \u0000 escape, and is a fixed point.
func FuzzStorableJSON(f *testing.F) {
	addFixtureSeeds(f, "web")
	for _, seed := range []string{`{"a":"\u0000"}`, `["\ud800","\udc00x","\ud83d\ude00","\\u0000"]`, `{"\u0000":1}`, `"\ud800\ud800\udc00"`, `"\uD800\uDC00"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := storableJSON(body)
		if !utf8.Valid(body) {
			if err == nil {
				t.Fatal("invalid UTF-8 accepted")
			}
			return
		}
		if !json.Valid(body) {
			return
		}
		if err != nil || !json.Valid(out) {
			t.Fatalf("%q became %q (%v)", body, out, err)
		}
		var in, got any
		json.Unmarshal(body, &in)
		json.Unmarshal(out, &got)
		if !reflect.DeepEqual(withoutNUL(in), got) {
			t.Fatalf("%q decodes differently after becoming %q", body, out)
		}
		if again, _ := storableJSON(out); !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point: %q → %q", out, again)
		}
		for _, r := range fmt.Sprint(got) {
			if r == 0 {
				t.Fatalf("%q still decodes to a NUL", out)
			}
		}
	})
}

// withoutNUL replaces NUL with U+FFFD in every string and key of a decoded JSON value.
func withoutNUL(v any) any {
	switch v := v.(type) {
	case string:
		return strings.ReplaceAll(v, "\x00", "\uFFFD")
	case []any:
		for i := range v {
			v[i] = withoutNUL(v[i])
		}
	case map[string]any:
		m := map[string]any{}
		for k, x := range v {
			m[withoutNUL(k).(string)] = withoutNUL(x)
		}
		return m
	}
	return v
}

func FuzzDecodeWebEvent(f *testing.F) {
	addFixtureSeeds(f, "web")
	f.Add([]byte(`{"data":{"object":{"id":"s","status":"active","customer":{"id":5}}}}`))
	f.Add([]byte(`{"data":{"object":{"id":"s","status":"canceled","items":{"data":[{"current_period_end":-1}]}}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var ev webEvent
		if json.Unmarshal(body, &ev) != nil {
			return
		}
		at := time.Unix(ev.Created, 0)
		if sub, err := decodeWebSubscription(ev.Data.Object); err == nil {
			if sub.ID == "" || sub.Status == "" {
				t.Fatalf("decoded a subscription without id or status: %+v", sub)
			}
			status, horizon, err := webCanonical(sub, at, nil, nil)
			again, horizonAgain, errAgain := webCanonical(sub, at, nil, nil)
			if status != again || !reflect.DeepEqual(horizon, horizonAgain) || (err == nil) != (errAgain == nil) {
				t.Fatal("webCanonical is not a function of its inputs")
			}
			if err == nil && (!validStatus(status) || (status == StatusExpired && horizon == nil)) {
				t.Fatalf("status %q with horizon %v", status, horizon)
			}
			for _, id := range sub.priceIDs() {
				if id == "" {
					t.Fatal("an empty price id")
				}
			}
			if end := sub.periodEnd(); end != nil && end.Unix() <= 0 {
				t.Fatalf("period end %v", end)
			}
		}
		if inv, err := decodeWebInvoice(ev.Data.Object); err == nil {
			if paid := inv.paidThrough(); paid != nil && paid.Unix() <= 0 {
				t.Fatalf("paid through %v", paid)
			}
			for _, id := range inv.priceIDs() {
				if id == "" {
					t.Fatal("an empty invoice price id")
				}
			}
			if inv.subscriptionID() != inv.subscriptionID() || inv.userID() != inv.userID() {
				t.Fatal("invoice fields are not stable")
			}
		}
		if attributesAgree(ev.Data.PreviousAttributes, ev.Data.Object) != attributesAgree(ev.Data.PreviousAttributes, ev.Data.Object) {
			t.Fatal("attributesAgree is not stable")
		}
	})
}

func FuzzDecodeMobileEvent(f *testing.F) {
	addFixtureSeeds(f, "mobile")
	f.Add([]byte(`{"event_type":"access_level_updated","event_datetime":"2026-10-01T12:00:04.118000+0000","event_properties":{"is_active":false}}`))
	f.Add([]byte(`{"event_type":"subscription_started","event_datetime":"2026-10-01T12:00:04+0000","event_properties":{"subscription_expires_at":"bad"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, at, err := decodeMobileEvent(body)
		if err != nil {
			return
		}
		if key := ev.subscriptionKey(); key != ev.subscriptionKey() {
			t.Fatal("the subscription key is not stable")
		}
		for eventType := range mobileRank {
			next, err := mobileCanonical(eventType, ev, at, mobileState{})
			if err != nil {
				continue
			}
			if !validStatus(next.Status) {
				t.Fatalf("%s gave status %q", eventType, next.Status)
			}
			if (next.Status == StatusExpired || next.Status == StatusRefunded) && next.PeriodEnd == nil {
				t.Fatalf("%s: %s without an end", eventType, next.Status)
			}
			// The state is stored as JSON: it must come back the same.
			raw, err := json.Marshal(next)
			if err != nil {
				t.Fatal(err)
			}
			var back mobileState
			if err := json.Unmarshal(raw, &back); err != nil || back.Status != next.Status || back.ProductID != next.ProductID ||
				back.CustomerUserID != next.CustomerUserID || (back.PeriodEnd == nil) != (next.PeriodEnd == nil) ||
				(back.PeriodEnd != nil && !back.PeriodEnd.Equal(*next.PeriodEnd)) {
				t.Fatalf("state %+v does not survive storage: %+v (%v)", next, back, err)
			}
		}
	})
}

func validStatus(s string) bool {
	switch s {
	case StatusActive, StatusTrialing, StatusPastDue, StatusCancelled, StatusExpired, StatusRefunded:
		return true
	}
	return false
}

// FuzzWebEventReadOnce: reading a web body once (decodeWebEvent) gives the envelope the
// general path (decodeTop, webEnvelope) gives, or its error, and the event the processor
// would decode; where it declines, the general path takes over.
func FuzzWebEventReadOnce(f *testing.F) {
	addFixtureSeeds(f, "web")
	f.Add([]byte(`{"id":"evt_1","type":5,"created":"x","data":{"object":{"id":"s"}}}`))
	f.Add([]byte(`{"id":null,"type":"customer.subscription.updated"}`))
	f.Add([]byte(`{"id":"evt_1","data":5}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"ID":"evt_1","id":"evt_2","Type":"a"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		env, ev, err := decodeWebEvent(body)
		if ev == nil && err == nil {
			return // the general path reads it
		}
		top, topErr := decodeTop(body)
		if topErr != nil {
			t.Fatalf("read once, but the general path finds no object: %v", topErr)
		}
		for key := range top {
			for _, field := range []string{"id", "type", "created", "data"} {
				if key != field && strings.EqualFold(key, field) {
					return // the one reading matches keys as the processor does, ignoring case
				}
			}
		}
		want, wantErr := webEnvelope(top)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("envelope error %v, the general path's %v", err, wantErr)
		}
		if err != nil {
			return
		}
		if env != want {
			t.Fatalf("envelope %+v, the general path's %+v", env, want)
		}
		var general webEvent
		if json.Unmarshal(body, &general) != nil {
			t.Fatalf("read once, but the processor's decode fails")
		}
		if !reflect.DeepEqual(*ev, general) {
			t.Fatalf("event %+v, the processor's %+v", *ev, general)
		}
	})
}
