package devidentity

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/logcapture"
)

// claimsOf reads an access token's claims (its signature is the emulator's own concern).
func claimsOf(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	if err != nil || json.Unmarshal(payload, &claims) != nil {
		t.Fatalf("token payload: %v", err)
	}
	return claims
}

// TestTheAccessTokenHookCustomisesTokens: with a hook, the tokens the service issues carry
// the claims it answers, given the user and the claims the service would issue; a hook
// that fails leaves the claims as they were (and the token is issued).
func TestTheAccessTokenHookCustomisesTokens(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	var asked []string
	var fail bool
	hook := func(_ context.Context, userID string, claims json.RawMessage) (json.RawMessage, error) {
		if fail {
			return nil, errors.New("the answers cannot be read")
		}
		var c map[string]any
		json.Unmarshal(claims, &c)
		asked = append(asked, userID+" "+c["sub"].(string))
		c["tollgate"] = map[string]any{"subscribed": true}
		return json.Marshal(c)
	}
	s, err := New(context.Background(), d, base, slog.New(slog.NewJSONHandler(&logcapture.Buffer{}, nil)), hook)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Mint(context.Background(), "hooked@example.com")
	if err != nil {
		t.Fatal(err)
	}
	claims := claimsOf(t, tok.AccessToken)
	if len(asked) != 1 || asked[0] != tok.UserID+" "+tok.UserID || claims["tollgate"] == nil || claims["email"] != "hooked@example.com" {
		t.Fatalf("asked %v, claims %v", asked, claims)
	}
	fail = true
	if tok, err = s.Mint(context.Background(), "hooked@example.com"); err != nil {
		t.Fatal(err)
	}
	if claims := claimsOf(t, tok.AccessToken); claims["tollgate"] != nil || claims["sub"] != tok.UserID {
		t.Fatalf("a failed hook: %v", claims)
	}
}
