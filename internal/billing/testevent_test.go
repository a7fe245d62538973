package billing

import (
	"strings"
	"testing"
)

// ForUserID gives one user the same id on every send and another user another, in the
// shape of the fixture's id.
func TestForUserIDKeepsShapeAndSeparatesUsers(t *testing.T) {
	const u1, u2 = "5a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d", "0b4f2f0e-6d43-4c55-9a41-3c1d2e7f8a90"
	for _, tc := range []struct {
		id    string
		shape func(string) bool
	}{
		{"sub_1TESTa1B2c3D4e5F6g7H8i9", func(s string) bool { return strings.HasPrefix(s, "sub_1TESTa1B2c3D4e5F6g7H8i9_") }},
		{"3f1c2a9e-7b4d-4e21-9a6f-0c5d8e2b1a47", IsUUID},
		{"2000000987654321", func(s string) bool { return len(s) == 16 && isDigits(s) && strings.HasPrefix(s, "200000") }},
	} {
		a, again, b := ForUserID(tc.id, u1), ForUserID(tc.id, u1), ForUserID(tc.id, u2)
		if a != again || a == b || a == tc.id || !tc.shape(a) || !tc.shape(b) {
			t.Errorf("%s: %s, again %s, another user %s", tc.id, a, again, b)
		}
	}
}

func TestRewriteIDsReplacesOnlyTheNamedKeysEverywhere(t *testing.T) {
	doc := map[string]any{"token": "t1", "keep": "t1", "list": []any{map[string]any{"token": "t1"}}}
	RewriteIDs(doc, "u", IDKeys("token"))
	want := ForUserID("t1", "u")
	if doc["token"] != want || doc["keep"] != "t1" || doc["list"].([]any)[0].(map[string]any)["token"] != want {
		t.Errorf("rewritten: %v", doc)
	}
}
