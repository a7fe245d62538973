package web

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBrandedForms(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "otp_new.html"), []byte(`{{define "content"}}<p class="support">Questions? support@acme.test</p>{{end}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "style.css"), []byte("/* acme's own */ body { background: #fff; }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "logo.svg"), []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), 0o644)
	h := newHarness(t, harnessOpts{brand: Brand{AppName: "Acme Cloud", Color: "#d9480f", LogoURL: "https://cdn.acme.test/logo.svg", TemplatesDir: dir}})

	r := h.get("/session/new")
	if r.status != http.StatusOK || !strings.Contains(r.body, "<title>Sign in · Acme Cloud</title>") {
		t.Fatalf("sign-in page: %d %q", r.status, r.body)
	}
	if logo := find(doc(t, r.body), "img", map[string]string{"src": "https://cdn.acme.test/logo.svg", "alt": "Acme Cloud"}); len(logo) != 1 {
		t.Error("the logo is not on the page")
	}
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "img-src 'self' data: https://cdn.acme.test;") || !strings.Contains(csp, "style-src 'self';") {
		t.Errorf("CSP %q: want the logo's origin in img-src and no inline styles", csp)
	}
	for _, tc := range []struct{ path, contentType, want string }{
		{"/static/brand.css", "text/css; charset=utf-8", "--accent: #d9480f; --accent-dark: #ad390c;"},
		{"/favicon.ico", "image/svg+xml", `fill="#d9480f"`},
		{"/static/style.css", "text/css; charset=utf-8", "acme's own"},                // TEMPLATES_DIR wins by file name
		{"/static/app.js", "text/javascript; charset=utf-8", "password_confirmation"}, // the rest stays embedded
		{"/static/logo.svg", "image/svg+xml", "<svg"},                                 // and the directory may add files
		{"/otp/new", "text/html; charset=utf-8", "Questions? support@acme.test"},
	} {
		r := h.get(tc.path)
		if r.status != http.StatusOK || r.header.Get("Content-Type") != tc.contentType || !strings.Contains(r.body, tc.want) {
			t.Errorf("GET %s: %d %s %q, want %q", tc.path, r.status, r.header.Get("Content-Type"), r.body, tc.want)
		}
	}
	if r := h.get("/static/../web.go"); r.status == http.StatusOK {
		t.Error("a path outside the static files was served")
	}

	plain := newHarness(t, harnessOpts{})
	if r := plain.get("/session/new"); !strings.Contains(r.body, "<title>Sign in · tollgate</title>") || !strings.Contains(r.body, `<p class="brand">tollgate</p>`) {
		t.Errorf("unbranded sign-in page: %q", r.body)
	}
	if r := plain.get("/favicon.ico"); r.status != http.StatusOK {
		t.Errorf("favicon without a brand: %d", r.status)
	}
}

func TestBrandRejectsAMissingTemplatesDir(t *testing.T) {
	_, err := New(Options{Brand: Brand{TemplatesDir: filepath.Join(t.TempDir(), "absent")}})
	if err == nil || !strings.Contains(err.Error(), "TEMPLATES_DIR") {
		t.Fatalf("error %v, want one naming TEMPLATES_DIR", err)
	}
}

// A team's template that does not parse stops the start, naming its file (docs/forms.md).
func TestBrandRejectsABrokenTemplate(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "otp_new.html"), []byte(`{{define "content"}}{{if}}{{end}}`), 0o644)
	_, err := New(Options{Brand: Brand{TemplatesDir: dir}})
	if err == nil || !strings.Contains(err.Error(), "otp_new.html:1") {
		t.Fatalf("error %v, want one naming otp_new.html and its line", err)
	}
}

func TestEmailBreaksBeforeTheAtAndAfterDots(t *testing.T) {
	for in, want := range map[string]string{
		"first.last@mail.example.test": "first.<wbr>last<wbr>@mail.<wbr>example.<wbr>test",
		"<b>@x.test":                   "&lt;b&gt;<wbr>@x.<wbr>test",
		"no-at-sign":                   "no-at-sign",
	} {
		// One box: it moves whole to the next line while it fits on one.
		want = `<span class="address">` + want + `</span>`
		if got := string(emailBreaks(in)); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
