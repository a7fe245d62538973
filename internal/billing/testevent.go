package billing

// Test events, as "tollgate webhook send --user" sends them: every provider id a fixture
// carries is replaced by one of that user's own.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/google/uuid"
)

// ForUserID is the id a test event sent for userID carries in place of its fixture's id:
// the same on every send for that user and another for any other user, so that a later
// fixture of the same subscription acts on the one the user's first fixture started, and
// never on another user's. It keeps the id's shape: a UUID stays a UUID, an id of digits
// (Apple's transaction ids) stays digits of the same length, any other gets a suffix.
func ForUserID(id, userID string) string {
	sum := sha256.Sum256([]byte(userID + "\x00" + id))
	switch {
	case IsUUID(id):
		return uuid.NewSHA1(uuid.NameSpaceOID, sum[:]).String()
	case len(id) >= 12 && isDigits(id):
		// The first digits stay (a store's ids share a prefix); ten come from the user.
		return fmt.Sprintf("%s%010d", id[:len(id)-10], binary.BigEndian.Uint64(sum[:8])%1e10)
	}
	return id + "_" + hex.EncodeToString(sum[:5])
}

// RewriteIDs replaces, everywhere in v (JSON decoded into maps and slices), each string
// value that isID says is a provider id by ForUserID(value, userID).
func RewriteIDs(v any, userID string, isID func(key, value string) bool) {
	switch v := v.(type) {
	case map[string]any:
		for key, child := range v {
			if s, ok := child.(string); ok {
				if s != "" && isID(key, s) {
					v[key] = ForUserID(s, userID)
				}
				continue
			}
			RewriteIDs(child, userID, isID)
		}
	case []any:
		for _, child := range v {
			RewriteIDs(child, userID, isID)
		}
	}
}

// IDKeys is an isID for RewriteIDs that names the keys whose values are provider ids.
func IDKeys(keys ...string) func(key, value string) bool {
	return func(key, _ string) bool { return slices.Contains(keys, key) }
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
