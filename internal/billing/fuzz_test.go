package billing_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/adapty"
	"github.com/tollgate/tollgate/internal/billing/stripe"
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

func FuzzEventID(f *testing.F) {
	addFixtureSeeds(f, "mobile")
	addFixtureSeeds(f, "web")
	f.Add([]byte(`{"event_id":12,"event_type":null}`))
	f.Add([]byte(`{"id":"evt_\u0000","object":"event","type":"x","data":{}}`))
	f.Add([]byte(`{"event_properties":"x","transaction_id":{"a":1}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := billing.DecodeTop(body); err != nil {
			return
		}
		for _, adapter := range []billing.Adapter{stripe.New(""), adapty.New("", nil)} {
			a, errA := adapter.Parse(body)
			b, errB := adapter.Parse(body)
			if a.ID != b.ID || a.Type != b.Type || (errA == nil) != (errB == nil) {
				t.Fatal("event id derivation is not deterministic")
			}
			if errA == nil && a.Answer == nil && (strings.TrimSpace(a.ID) == "" || len(a.ID) > billing.MaxEventIDLen ||
				strings.ContainsFunc(a.ID, func(r rune) bool { return unicode.IsControl(r) || r == utf8.RuneError })) {
				t.Fatalf("accepted event id %q", a.ID)
			}
		}
		if m, err := adapty.New("", nil).Parse(body); err == nil && strings.HasPrefix(m.ID, "mobile_synth_") && len(m.ID) != len("mobile_synth_")+32 {
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
		out, err := billing.StorableJSON(body)
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
		if again, _ := billing.StorableJSON(out); !bytes.Equal(again, out) {
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
