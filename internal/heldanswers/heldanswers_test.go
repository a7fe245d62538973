package heldanswers_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/heldanswers"
	"github.com/tollgate/tollgate/internal/logcapture"
	"github.com/tollgate/tollgate/internal/signingkeys"
)

var start = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// answers is a user's answer set by the test.
type answers struct{ held atomic.Pointer[reader.Held] }

func (a *answers) Held(context.Context, string) (reader.Held, error) { return *a.held.Load(), nil }

func (a *answers) set(plan string, entitlements map[string]any, changesAt time.Time) {
	status, provider := "active", "web"
	a.held.Store(&reader.Held{View: billing.HeldView{Subscribed: true, Status: &status, Provider: &provider,
		Plan: &billing.Plan{Key: plan, Name: plan}, Entitlements: entitlements}, ChangesAt: changesAt})
}

type harness struct {
	issuer  *heldanswers.Issuer
	answers *answers
	keys    *signingkeys.Keys
	now     *atomic.Int64
	logs    *logcapture.Buffer
}

func newHarness(t *testing.T) harness {
	t.Helper()
	h := harness{answers: &answers{}, now: &atomic.Int64{}, logs: &logcapture.Buffer{}}
	h.now.Store(start.UnixNano())
	clock := func() time.Time { return time.Unix(0, h.now.Load()).UTC() }
	h.keys = signingkeys.New(dbtest.SQLite(t), clock)
	h.issuer = heldanswers.New(heldanswers.Options{Answers: h.answers, Keys: h.keys, Issuer: "https://billing.example.test",
		Audience: "tollgate", TTL: 15 * time.Minute, Clock: clock, Log: slog.New(slog.NewTextHandler(h.logs, nil))})
	return h
}

func claimsOf(t *testing.T, token string) map[string]any {
	t.Helper()
	payload, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[1])
	var claims map[string]any
	if err != nil || json.Unmarshal(payload, &claims) != nil {
		t.Fatalf("payload of %q: %v", token, err)
	}
	return claims
}

// TestATokenNeverOutlivesItsAnswer: exp is iat + TTL, or the answer's next change when that
// comes first, and a second after iat at the least.
func TestATokenNeverOutlivesItsAnswer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		changesAt time.Time
		life      time.Duration
	}{
		{"nothing ahead", time.Time{}, 15 * time.Minute},
		{"a renewal in a month", start.Add(30 * 24 * time.Hour), 15 * time.Minute},
		{"a period ending in 5 s", start.Add(5*time.Second + 700*time.Millisecond), 5 * time.Second},
		{"a period ending in 200 ms", start.Add(200 * time.Millisecond), time.Second},
	} {
		h := newHarness(t)
		h.answers.set("pro", map[string]any{"export": true}, c.changesAt)
		tok, err := h.issuer.Token(context.Background(), "u1")
		if err != nil {
			t.Fatal(err)
		}
		claims := claimsOf(t, tok.Token)
		iat, exp := int64(claims["iat"].(float64)), int64(claims["exp"].(float64))
		if time.Duration(exp-iat)*time.Second != c.life || !tok.ExpiresAt.Equal(time.Unix(exp, 0)) || claims["sub"] != "u1" {
			t.Errorf("%s: life %ds, want %v; expires_at %v", c.name, exp-iat, c.life, tok.ExpiresAt)
		}
	}
}

// TestATokenIsHandedOutAgain: the same token while the answer and the key are unchanged and
// more than half its life is left; a new one when the answer changes, the key rotates, or
// half its life has passed.
func TestATokenIsHandedOutAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	h.answers.set("pro", map[string]any{"export": true}, time.Time{})
	mint := func() string {
		tok, err := h.issuer.Token(ctx, "u1")
		if err != nil {
			t.Fatal(err)
		}
		return tok.Token
	}
	first := mint()
	h.now.Add(int64(7 * time.Minute))
	if mint() != first {
		t.Fatal("a token with more than half its life left was not handed out again")
	}
	h.now.Add(int64(time.Minute)) // 8 of 15 minutes gone
	second := mint()
	if second == first {
		t.Fatal("a token past half its life was handed out again")
	}
	h.answers.set("team", map[string]any{"export": true}, time.Time{})
	third := mint()
	if third == second || claimsOf(t, third)["billing"].(map[string]any)["plan"].(map[string]any)["key"] != "team" {
		t.Fatal("a changed answer was not signed anew")
	}
	if _, err := h.keys.Rotate(ctx, true); err != nil {
		t.Fatal(err)
	}
	if mint() == third {
		t.Fatal("a token of the key before the rotation was handed out again")
	}
}

// TestLargeEntitlementsAreLeftOut: entitlements that would make a token larger than about
// 2 KiB are left out (entitlements_omitted), with one warning; the token stays small.
func TestLargeEntitlementsAreLeftOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	big := map[string]any{}
	for i := range 80 {
		big[fmt.Sprintf("feature_with_a_long_name_%02d", i)] = true
	}
	h.answers.set("enterprise", big, time.Time{})
	for user := range 3 {
		tok, err := h.issuer.Token(context.Background(), fmt.Sprint("u", user))
		if err != nil {
			t.Fatal(err)
		}
		b := claimsOf(t, tok.Token)["billing"].(map[string]any)
		if len(tok.Token) > 2048 || b["entitlements"] != nil || b["entitlements_omitted"] != true || b["plan"] == nil {
			t.Fatalf("%d bytes, billing %v", len(tok.Token), b)
		}
	}
	if n := strings.Count(h.logs.String(), "too large"); n != 1 {
		t.Fatalf("%d warnings, want one: %s", n, h.logs)
	}
	h.answers.set("pro", map[string]any{"export": true}, time.Time{})
	tok, _ := h.issuer.Token(context.Background(), "small")
	if b := claimsOf(t, tok.Token)["billing"].(map[string]any); b["entitlements_omitted"] != nil || b["entitlements"] == nil {
		t.Fatalf("a small answer: %v", b)
	}
}

// TestTheClaim: the access token's claim is the billing object plus valid_until when the
// answer may change by itself, and without it otherwise.
func TestTheClaim(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	end := start.Add(30 * 24 * time.Hour)
	h.answers.set("pro", map[string]any{"export": true}, end)
	claim, err := h.issuer.Claim(context.Background(), "u1")
	var c map[string]any
	if err != nil || json.Unmarshal(claim, &c) != nil || c["valid_until"] != float64(end.Unix()) || c["plan"].(map[string]any)["key"] != "pro" {
		t.Fatalf("claim %s %v", claim, err)
	}
	h.answers.set("pro", map[string]any{"export": true}, time.Time{})
	claim, _ = h.issuer.Claim(context.Background(), "u1")
	if strings.Contains(string(claim), "valid_until") || !json.Valid(claim) {
		t.Fatalf("claim without an end: %s", claim)
	}
}
