package config

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

// HeldAnswers is how a user's billing answer is handed out for an app to hold: the signed
// entitlement token, and the tollgate claim the identity service's Custom Access Token
// hook adds to access tokens.
type HeldAnswers struct {
	// TTL (ENTITLEMENT_TOKEN_TTL, 10s to 24h, 15m unless set) is a token's longest life.
	TTL time.Duration
	// Audience (ENTITLEMENT_TOKEN_AUDIENCE, "tollgate" unless set) is a token's aud.
	Audience string
	// HookSecrets (AUTH_HOOK_SECRET: the "v1,whsec_…" values the identity service shows,
	// separated by "|" during a rotation) verify the hook's requests; none turns the hook
	// route off.
	HookSecrets [][]byte
}

func loadHeldAnswers(get func(name, def string) string, fail func(name, format string, args ...any)) HeldAnswers {
	h := HeldAnswers{TTL: 15 * time.Minute, Audience: get("ENTITLEMENT_TOKEN_AUDIENCE", "tollgate")}
	if raw := get("ENTITLEMENT_TOKEN_TTL", ""); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d < 10*time.Second || d > 24*time.Hour {
			fail("ENTITLEMENT_TOKEN_TTL", "want a duration from 10s to 24h such as 15m, got %q", raw)
		} else {
			h.TTL = d
		}
	}
	for _, raw := range strings.Split(get("AUTH_HOOK_SECRET", ""), "|") {
		if raw = strings.TrimSpace(raw); raw == "" {
			continue
		}
		secret, err := parseHookSecret(raw)
		if err != nil {
			fail("AUTH_HOOK_SECRET", "%v", err)
			continue
		}
		h.HookSecrets = append(h.HookSecrets, secret)
	}
	return h
}

// parseHookSecret reads a Standard Webhooks symmetric secret as the identity service shows
// it: "v1,whsec_" and base64 (the "v1," may be left off).
func parseHookSecret(raw string) ([]byte, error) {
	encoded, ok := strings.CutPrefix(strings.TrimPrefix(raw, "v1,"), "whsec_")
	if !ok {
		return nil, fmt.Errorf("want the hook secret as the identity service shows it (v1,whsec_…, several separated by |), got a value without whsec_")
	}
	secret, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil || len(secret) < 16 {
		return nil, fmt.Errorf("want the hook secret as the identity service shows it (v1,whsec_ and base64 of 16 bytes or more); the value after whsec_ is not")
	}
	return secret, nil
}
