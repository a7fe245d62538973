package identity_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tollgate/tollgate/internal/identity"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
)

// TestErrorFormats: both of GoTrue's error bodies, and the header fallback, give the same
// typed error.
func TestErrorFormats(t *testing.T) {
	tests := []struct {
		name, body, header string
		status             int
		code, msg, kind    string
		reasons            []string
	}{
		{"legacy format", `{"code":422,"error_code":"weak_password","msg":"Password should be at least 6 characters.","weak_password":{"reasons":["length"]}}`, "",
			422, "weak_password", "Password should be at least 6 characters.", identity.KindWeakPassword, []string{"length"}},
		{"2024-01-01 format", `{"code":"bad_code_verifier","message":"code challenge does not match"}`, "",
			400, "bad_code_verifier", "code challenge does not match", identity.KindPKCE, nil},
		{"code only in the header", `{"message":"Session not found"}`, "session_not_found",
			403, "session_not_found", "Session not found", identity.KindSessionMissing, nil},
		{"flow state expired", `{"code":422,"error_code":"flow_state_expired","msg":"flow state has expired"}`, "",
			422, "flow_state_expired", "flow state has expired", identity.KindPKCE, nil},
		{"plain refusal", `{"code":400,"error_code":"invalid_credentials","msg":"Invalid login credentials"}`, "",
			400, "invalid_credentials", "Invalid login credentials", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.header != "" {
					w.Header().Set("X-Sb-Error-Code", tc.header)
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			_, err := identity.New(srv.URL, "", nil).SignInWithPassword(context.Background(), "a@b.test", "x")
			e, ok := identity.AsError(err)
			if !ok {
				t.Fatalf("error %v is not an *identity.Error", err)
			}
			if e.Status != tc.status || e.Code != tc.code || e.Message != tc.msg || e.Kind() != tc.kind || strings.Join(e.WeakPasswordReasons, ",") != strings.Join(tc.reasons, ",") {
				t.Fatalf("got %+v kind %q", e, e.Kind())
			}
		})
	}
}

func TestUnavailable(t *testing.T) {
	for _, answer := range []struct {
		status int
		body   string
	}{{500, `{"message":"boom"}`}, {502, "<html>bad gateway</html>"}, {200, "<html>not json</html>"}, {400, "<html>proxy error</html>"}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(answer.status)
			io.WriteString(w, answer.body)
		}))
		_, err := identity.New(srv.URL, "", nil).SignInWithPassword(context.Background(), "a@b.test", "x")
		srv.Close()
		if !errors.Is(err, identity.ErrUnavailable) {
			t.Errorf("%d %q: %v, want ErrUnavailable", answer.status, answer.body, err)
		}
	}
	_, err := identity.New("http://127.0.0.1:1", "", nil).GetUser(context.Background(), "t")
	if !errors.Is(err, identity.ErrUnavailable) {
		t.Errorf("connection refused: %v", err)
	}
}

// TestRequestShapes: JSON bodies, grant_type and redirect_to in the query, apikey header.
func TestRequestShapes(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = append(seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" apikey="+r.Header.Get("apikey")+" ct="+r.Header.Get("Content-Type")+" "+string(b))
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	c := identity.New(srv.URL+"/auth/v1", "anon-key", nil)
	ctx := context.Background()
	c.SignInWithPassword(ctx, "a@b.test", "pw")
	c.SignUp(ctx, "a@b.test", "pw", map[string]any{"name": "Ada"}, "https://app/cb", identity.PKCE{Challenge: "ch"})
	c.ExchangeCode(ctx, "code-1", "verifier-1")
	want := []string{
		`POST /auth/v1/token?grant_type=password apikey=anon-key ct=application/json {"email":"a@b.test","password":"pw"}`,
		`POST /auth/v1/signup?redirect_to=https%3A%2F%2Fapp%2Fcb apikey=anon-key ct=application/json {"code_challenge":"ch","code_challenge_method":"s256","data":{"name":"Ada"},"email":"a@b.test","password":"pw"}`,
		`POST /auth/v1/token?grant_type=pkce apikey=anon-key ct=application/json {"auth_code":"code-1","code_verifier":"verifier-1"}`,
	}
	for i := range want {
		if i >= len(seen) || seen[i] != want[i] {
			t.Fatalf("request %d:\n got %q\nwant %q", i, seen, want[i])
		}
	}
}

// TestAgainstTheFake: refresh rotation with reuse detection revokes the family.
func TestRefreshReuseRevokesTheFamily(t *testing.T) {
	fake := identitytest.New(t)
	fake.AddUser("r@example.test", "password1")
	c := identity.New(fake.URL, "", nil)
	ctx := context.Background()
	s, err := c.SignInWithPassword(ctx, "r@example.test", "password1")
	if err != nil {
		t.Fatal(err)
	}
	next, err := c.Refresh(ctx, s.RefreshToken)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Refresh(ctx, s.RefreshToken) // reuse
	if e, ok := identity.AsError(err); !ok || e.Code != "refresh_token_already_used" || e.Kind() != identity.KindSessionMissing {
		t.Fatalf("reuse: %v", err)
	}
	if _, err := c.Refresh(ctx, next.RefreshToken); err == nil {
		t.Fatal("the family survived a reuse")
	}
}
