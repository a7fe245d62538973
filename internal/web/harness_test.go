package web

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/tollgate/tollgate/internal/billing/checkout"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/identity"
	"github.com/tollgate/tollgate/internal/identity/identitytest"
	"github.com/tollgate/tollgate/internal/logcapture"
	"github.com/tollgate/tollgate/internal/ratelimit"
)

type harness struct {
	t    *testing.T
	fake *identitytest.Fake
	web  *Web
	srv  *httptest.Server
	jar  http.CookieJar
	http *http.Client
	db   *db.DB
	logs *logcapture.Buffer
}

type harnessOpts struct {
	db       *db.DB
	secure   bool
	oauth    []string
	perEmail ratelimit.Limit
	brand    Brand
	billing  *reader.Reader
	checkout *checkout.Checkout
	// checkoutPages are the provider's page origins form-action allows.
	checkoutPages []string
}

// newHarness serves the forms' real handler tree over the fake identity service, with a
// browser-like client (cookie jar, redirects not followed so tests can read them).
func newHarness(t *testing.T, o harnessOpts) *harness {
	t.Helper()
	h := &harness{t: t, fake: identitytest.New(t), db: o.db, logs: &logcapture.Buffer{}}
	if h.db == nil {
		h.db = dbtest.SQLite(t)
	}
	throttles, err := ratelimit.New(ratelimit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.srv.Close)
	h.web, err = New(Options{
		DB: h.db, Identity: identity.New(h.fake.URL, "", &http.Client{Timeout: 2 * 1e9}), Throttles: throttles,
		PublicURL: h.srv.URL, OAuthProviders: o.oauth, SecureCookies: o.secure,
		PerIP: ratelimit.Limit{Name: "forms/ip", Requests: 10_000, Window: 60 * 1e9}, PerEmail: o.perEmail, Brand: o.brand,
		Billing: o.billing, Checkout: o.checkout, CheckoutPages: o.checkoutPages,
		Log: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/", h.web.Handler())
	h.newBrowser()
	return h
}

// newBrowser starts a fresh cookie jar: another browser.
func (h *harness) newBrowser() {
	h.jar, _ = cookiejar.New(nil)
	h.http = &http.Client{Jar: h.jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type response struct {
	status   int
	location string
	body     string
	header   http.Header
	cookies  []*http.Cookie
}

func (h *harness) do(req *http.Request) response {
	h.t.Helper()
	resp, err := h.http.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	// <wbr> only says where a narrow screen may wrap (an e-mail address, say): the tests
	// read the text as a reader does.
	body := strings.ReplaceAll(string(b), "<wbr>", "")
	return response{status: resp.StatusCode, location: resp.Header.Get("Location"), body: body, header: resp.Header, cookies: resp.Cookies()}
}

func (h *harness) get(path string) response {
	req, _ := http.NewRequest(http.MethodGet, h.url(path), nil)
	return h.do(req)
}

func (h *harness) post(path string, form url.Values, header ...string) response {
	req, _ := http.NewRequest(http.MethodPost, h.url(path), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return h.do(req)
}

func (h *harness) url(path string) string {
	if strings.HasPrefix(path, "http") {
		return path
	}
	return h.srv.URL + path
}

// follow GETs a redirect target, then returns that page.
func (h *harness) follow(r response) response {
	h.t.Helper()
	if r.status/100 != 3 {
		h.t.Fatalf("want a redirect, got %d: %s", r.status, r.body)
	}
	return h.get(r.location)
}

// signIn creates a user at the fake and signs in through the form.
func (h *harness) signIn(email, password string) {
	h.t.Helper()
	h.fake.AddUser(email, password)
	r := h.post("/session", url.Values{"email": {email}, "password": {password}})
	if r.status != http.StatusSeeOther || r.location != "/" {
		h.t.Fatalf("sign-in: %d %s %s", r.status, r.location, r.body)
	}
}

func (h *harness) sessionCookie() *http.Cookie {
	u, _ := url.Parse(h.srv.URL)
	for _, c := range h.jar.Cookies(u) {
		if strings.HasSuffix(c.Name, "tollgate_session") {
			return c
		}
	}
	return nil
}

// doc parses a page.
func doc(t *testing.T, body string) *html.Node {
	t.Helper()
	n, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// find returns the elements of tag whose attributes include all of match.
func find(n *html.Node, tag string, match map[string]string) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == tag {
			ok := true
			for k, v := range match {
				if got, has := attr(n, k); !has || got != v {
					ok = false
				}
			}
			if ok {
				out = append(out, n)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.TrimSpace(b.String())
}

// flash is the text of the page's alert or notice, or "".
func flash(t *testing.T, body, class string) string {
	for _, n := range find(doc(t, body), "div", nil) {
		if c, _ := attr(n, "class"); strings.Contains(c, class) {
			return text(n)
		}
	}
	return ""
}

// emailLink is the link of the last e-mail the fake identity service sent to address,
// which must be of kind (signup, recovery, magiclink).
func (h *harness) emailLink(address, kind string) string {
	h.t.Helper()
	e, ok := h.fake.LastEmail(address)
	if !ok || e.Type != kind || e.Link == "" {
		h.t.Fatalf("no %s email to %s: %+v", kind, address, e)
	}
	return e.Link
}

func str(v any) string { s, _ := v.(string); return s }
