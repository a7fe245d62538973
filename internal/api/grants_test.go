package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/audit"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

const grantPlans = `
plans:
  free:
    default: true
    entitlements:
      - {name: exports, value: false}
  pro:
    entitlements:
      - {name: exports, value: true}
`

// TestGrantRoutes: a service key grants, lists and revokes through the real handler
// tree; the user's answer follows at once; what cannot be granted is a 422 problem; a
// revocation needs a reason, by query or body; a user token cannot grant. Each grant and
// revocation is in the audit log as the key.
func TestGrantRoutes(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := newHarness(t, harnessConfig{db: d, plans: grantPlans})
		ctx := context.Background()
		key, err := h.serviceKeys.Create(ctx, "support")
		if err != nil {
			t.Fatal(err)
		}
		const user = "0b7e7a52-6f2b-4c55-9a3e-2d1f0c9e8b7a"
		grantsPath := "/api/v1/users/" + user + "/grants"
		post := func(body string) *httptest.ResponseRecorder {
			return h.do(http.MethodPost, grantsPath, bearer(key), strings.NewReader(body), "Content-Type", "application/json")
		}
		future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		for _, tc := range []struct{ name, body, problem string }{
			{"unknown plan", `{"plan":"platinum","duration":"30d","reason":"bug"}`, "invalid-grant"},
			{"end in the past", `{"plan":"pro","until":"2020-01-01T00:00:00Z","reason":"bug"}`, "invalid-grant"},
			{"no reason", `{"plan":"pro","duration":"30d"}`, "invalid-request"},
			{"blank reason", `{"plan":"pro","duration":"30d","reason":"  "}`, "invalid-grant"},
			{"no end", `{"plan":"pro","reason":"bug"}`, "invalid-grant"},
			{"both ends", `{"plan":"pro","duration":"30d","until":"` + future + `","reason":"bug"}`, "invalid-grant"},
			{"a duration that is none", `{"plan":"pro","duration":"soon","reason":"bug"}`, "invalid-grant"},
			{"an until that is no time", `{"plan":"pro","until":"tomorrow","reason":"bug"}`, "invalid-request"},
			// What no database stores, and what would overflow, are refused before anything is asked of one.
			{"a NUL in the plan", `{"plan":"pro\u0000","duration":"30d","reason":"bug"}`, "invalid-grant"},
			{"a NUL in the reason", `{"plan":"pro","duration":"30d","reason":"b\u0000ug"}`, "invalid-grant"},
			{"a duration that overflows", `{"plan":"pro","duration":"213504d","reason":"bug"}`, "invalid-grant"},
			{"a duration past the ceiling", `{"plan":"pro","duration":"36501d","reason":"bug"}`, "invalid-grant"},
			{"an until past the ceiling", `{"plan":"pro","until":"9999-01-01T00:00:00Z","reason":"bug"}`, "invalid-grant"},
		} {
			rec := post(tc.body)
			if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "/"+tc.problem) {
				t.Errorf("%s: %d %s", tc.name, rec.Code, rec.Body)
			}
		}
		var stored int
		if err := d.QueryRow("select count(*) from provider_events").Scan(&stored); err != nil || stored != 0 {
			t.Fatalf("%d events stored by refused grants (%v)", stored, err)
		}
		mustStatus(t, h.do(http.MethodPost, grantsPath, bearer(h.key.mint(t, validClaims())), strings.NewReader(`{"plan":"pro","duration":"1d","reason":"x"}`),
			"Content-Type", "application/json"), http.StatusForbidden)

		rec := post(`{"plan":"pro","duration":"30d","reason":"bug #12"}`)
		mustStatus(t, rec, http.StatusCreated)
		var made Grant
		if err := json.Unmarshal(rec.Body.Bytes(), &made); err != nil || made.ID == "" || made.Status != "active" || made.By != "key:support" ||
			made.Plan != "pro" || made.Ends.Sub(made.Starts) != 30*24*time.Hour {
			t.Fatalf("made: %s", rec.Body)
		}
		view := h.do(http.MethodGet, "/api/v1/users/"+user+"/entitlements", bearer(key), nil)
		if !strings.Contains(view.Body.String(), `"provider":"grant"`) || !strings.Contains(view.Body.String(), `"exports":true`) {
			t.Fatalf("the answer under the grant: %s", view.Body)
		}

		list := h.do(http.MethodGet, grantsPath, bearer(key), nil)
		mustStatus(t, list, http.StatusOK)
		if !strings.Contains(list.Body.String(), made.ID) || !strings.Contains(list.Body.String(), `"reason":"bug #12"`) {
			t.Fatalf("list: %s", list.Body)
		}

		one := grantsPath + "/" + made.ID
		if rec := h.do(http.MethodDelete, one, bearer(key), nil); rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("a revocation without a reason: %d %s", rec.Code, rec.Body)
		}
		mustStatus(t, h.do(http.MethodDelete, "/api/v1/users/"+strings.Replace(user, "0b", "0c", 1)+"/grants/"+made.ID+"?reason=x", bearer(key), nil),
			http.StatusNotFound)
		mustStatus(t, h.do(http.MethodDelete, one, bearer(key), strings.NewReader(`{"reason":"fi\u0000xed"}`), "Content-Type", "application/json"),
			http.StatusUnprocessableEntity)
		rec = h.do(http.MethodDelete, one, bearer(key), strings.NewReader(`{"reason":"fixed"}`), "Content-Type", "application/json")
		mustStatus(t, rec, http.StatusOK)
		var ended Grant
		if err := json.Unmarshal(rec.Body.Bytes(), &ended); err != nil || ended.Status != "expired" || ended.RevokeReason != "fixed" || ended.Revoked == nil {
			t.Fatalf("revoked: %s", rec.Body)
		}
		mustStatus(t, h.do(http.MethodDelete, one+"?reason=again", bearer(key), nil), http.StatusConflict)
		view = h.do(http.MethodGet, "/api/v1/users/"+user+"/entitlements", bearer(key), nil)
		if !strings.Contains(view.Body.String(), `"subscribed":false`) || !strings.Contains(view.Body.String(), `"status":"expired"`) {
			t.Fatalf("the answer once revoked: %s", view.Body)
		}

		rec = post(`{"plan":"pro","until":"` + future + `","reason":"beta"}`)
		mustStatus(t, rec, http.StatusCreated)
		var second Grant
		if err := json.Unmarshal(rec.Body.Bytes(), &second); err != nil {
			t.Fatal(err)
		}
		mustStatus(t, h.do(http.MethodDelete, grantsPath+"/"+second.ID+"?reason=beta+over", bearer(key), nil), http.StatusOK)

		entries, err := audit.List(ctx, d, audit.Filter{UserID: user})
		if err != nil || len(entries) != 4 {
			t.Fatalf("audit %+v %v", entries, err)
		}
		for _, e := range entries {
			if e.Actor != "key:support" || e.Result != "ok" {
				t.Errorf("audit entry %+v", e)
			}
		}
	})
}
