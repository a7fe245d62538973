package billingtest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
)

// WebCreated is the created second of the web fixtures.
const WebCreated = int64(1790856000)

// WebLifecycle returns the four events of one web subscription, all rewritten to the
// subscription id sub: created(incomplete) and updated(active) in the same second, the
// first invoice paid a second later, and a deletion ten days on.
func WebLifecycle(t testing.TB, sub string) map[string][]byte {
	t.Helper()
	rename := func(name string, fn func(m map[string]any)) []byte {
		return Edit(t, Fixture(t, name), func(m map[string]any) {
			m["id"] = m["id"].(string) + "_" + sub
			fn(m)
		})
	}
	setSub := func(m map[string]any) { Path(m, "data", "object")["id"] = sub }
	deletedAt := float64(WebCreated + 10*86400)
	return map[string][]byte{
		"created": rename("web/customer.subscription.created.json", setSub),
		"updated": rename("web/customer.subscription.updated.json", setSub),
		"invoice": rename("web/invoice.payment_succeeded.json", func(m map[string]any) {
			Path(m, "data", "object", "parent", "subscription_details")["subscription"] = sub
		}),
		"deleted": rename("web/customer.subscription.updated.json", func(m map[string]any) {
			setSub(m)
			m["id"], m["type"] = "evt_deleted_"+sub, "customer.subscription.deleted"
			m["created"] = deletedAt
			obj := Path(m, "data", "object")
			obj["status"], obj["ended_at"], obj["canceled_at"] = "canceled", deletedAt, deletedAt
			delete(Path(m, "data"), "previous_attributes")
		}),
	}
}

func Permutations(items []string) [][]string {
	if len(items) <= 1 {
		return [][]string{append([]string{}, items...)}
	}
	var out [][]string
	for i := range items {
		rest := append(append([]string{}, items[:i]...), items[i+1:]...)
		for _, p := range Permutations(rest) {
			out = append(out, append([]string{items[i]}, p...))
		}
	}
	return out
}

// WebSignature computes the web provider's v1 the way its documentation describes,
// without any of the code under test.
func WebSignature(secret string, t int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%d.%s", t, body)
	return hex.EncodeToString(mac.Sum(nil))
}
