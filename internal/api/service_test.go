package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/ratelimit"
)

// TestServiceKeys is the service-key matrix through the real handler tree: a valid key
// acts on any user; a revoked or unknown key is 401; a user token on a service operation
// and a key on /me are 403; a user id that is not a UUID is 422. Keys reach neither the
// logs nor the database.
func TestServiceKeys(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		// The per-IP limit is above the per-token one, so that the RateLimit headers, which
		// are the tighter limit's, show whether the key was counted.
		h := newHarness(t, harnessConfig{db: d, perIP: ratelimit.Limit{Name: "api/ip", Requests: 100_000, Window: time.Minute}})
		ctx := context.Background()
		key, err := h.serviceKeys.Create(ctx, "backend")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(key, "tgk_") || len(key) < len("tgk_")+32 {
			t.Fatalf("key %q", key)
		}
		if _, err := h.serviceKeys.Create(ctx, "backend"); err == nil {
			t.Fatal("a second key of the same name was made")
		}
		const stranger = "0b7e7a52-6f2b-4c55-9a3e-2d1f0c9e8b7a" // never seen by tollgate
		userToken := bearer(h.key.mint(t, validClaims()))

		rec := h.do(http.MethodGet, "/api/v1/users/"+stranger+"/entitlements", bearer(key), nil)
		mustStatus(t, rec, http.StatusOK)
		var view struct {
			Subscribed   bool
			Plan         struct{ Key string }
			Entitlements map[string]any
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &view); err != nil || view.Subscribed || view.Plan.Key != "free" || view.Entitlements["projects"] != float64(2) {
			t.Fatalf("entitlements of an unseen user: %s", rec.Body)
		}
		if rec.Header().Get("RateLimit-Limit") != "1000" || rec.Header().Get("RateLimit-Remaining") != "999" {
			t.Fatalf("the per-token throttle did not count the key: %v", rec.Header())
		}
		rec = h.do(http.MethodPost, "/api/v1/users/"+stranger+"/usage/projects", bearer(key), strings.NewReader(`{"amount": 2}`), "Content-Type", "application/json")
		mustStatus(t, rec, http.StatusOK)
		if !strings.Contains(rec.Body.String(), `"used":2`) {
			t.Fatalf("usage for a user: %s", rec.Body)
		}
		mustStatus(t, h.do(http.MethodPost, "/api/v1/users/"+stranger+"/usage/projects", bearer(key), nil), http.StatusForbidden)

		for _, tc := range []struct {
			name, method, path, auth string
			status                   int
		}{
			{"user token on a service operation", http.MethodGet, "/api/v1/users/" + stranger + "/entitlements", userToken, http.StatusForbidden},
			{"user token on service usage", http.MethodPost, "/api/v1/users/" + stranger + "/usage/projects", userToken, http.StatusForbidden},
			{"service key on /me", http.MethodGet, "/api/v1/me", bearer(key), http.StatusForbidden},
			{"service key on the user's usage", http.MethodPost, "/api/v1/usage/projects", bearer(key), http.StatusForbidden},
			{"unknown key", http.MethodGet, "/api/v1/users/" + stranger + "/entitlements", bearer("tgk_" + strings.Repeat("x", 43)), http.StatusUnauthorized},
			{"user id not a UUID", http.MethodGet, "/api/v1/users/not-a-uuid/entitlements", bearer(key), http.StatusUnprocessableEntity},
		} {
			rec := h.do(tc.method, tc.path, tc.auth, nil)
			if rec.Code != tc.status || rec.Header().Get("Content-Type") != "application/problem+json" {
				t.Errorf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body, tc.status)
			}
		}

		keys, err := h.serviceKeys.List(ctx)
		if err != nil || len(keys) != 1 || keys[0].Name != "backend" || keys[0].LastUsedAt == nil || !strings.HasPrefix(key, keys[0].Prefix) {
			t.Fatalf("keys list after use: %+v %v", keys, err)
		}
		if err := h.serviceKeys.Revoke(ctx, "backend"); err != nil {
			t.Fatal(err)
		}
		mustStatus(t, h.do(http.MethodGet, "/api/v1/users/"+stranger+"/entitlements", bearer(key), nil), http.StatusUnauthorized)

		second, err := h.serviceKeys.Create(ctx, "second")
		if err != nil {
			t.Fatal(err)
		}
		var stored string
		if err := d.QueryRow("select key_hash from service_keys").Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if len(stored) != 64 || strings.Contains(stored, second) || strings.Contains(stored, second[4:]) {
			t.Fatalf("stored %q: want only the key's SHA-256", stored)
		}
		if strings.Contains(h.logs.String(), key) || strings.Contains(h.logs.String(), key[4:]) {
			t.Fatal("a service key reached the log")
		}
	})
}

// TestAnOperationOutsideV1PanicsAtRegistration: only /api/* reaches the API, so an
// operation elsewhere would be a silent 404; registering it panics, naming the fix.
func TestAnOperationOutsideV1PanicsAtRegistration(t *testing.T) {
	a := New(Options{})
	for _, path := range []string{"/exports", "/api/v2/exports", "/apiv1/x"} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, "POST "+path+" is outside /api/v1") || !strings.Contains(msg, "did you mean") {
					t.Errorf("registering POST %s: panic %q", path, msg)
				}
			}()
			huma.Register(a.Huma(), huma.Operation{Method: http.MethodPost, Path: path},
				func(context.Context, *struct{}) (*struct{}, error) { return nil, nil })
		}()
	}
	huma.Register(a.Huma(), huma.Operation{Method: http.MethodPost, Path: "/api/v1/exports"},
		func(context.Context, *struct{}) (*struct{}, error) { return nil, nil })
}
