package billingtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/playstore"
)

// Fixture reads a provider payload from internal/billing/testdata, wherever the test runs.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Edit decodes a JSON document, lets fn change it, and encodes it again.
func Edit(t testing.TB, body []byte, fn func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Path walks nested objects: Path(m, "data", "object") is m["data"]["object"].
func Path(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		m = m[k].(map[string]any)
	}
	return m
}

// JSON encodes v, failing the test if it cannot.
func JSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// WaitFor polls cond every 10 ms until it holds, failing the test after 10 s.
func WaitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
	}
}

// Stamp renders a time as the tests compare it: RFC 3339 in UTC.
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// SoldInApp says which of the stores these kits know sell in the app, as the list of
// stores says it to checkout.
func SoldInApp(provider string) bool {
	return provider == billing.ProviderMobile || provider == appstore.Provider || provider == playstore.Provider
}
