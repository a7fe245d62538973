package web

import (
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Brand is how the forms look: the product's name, accent colour and logo, and a directory
// whose files override the embedded templates (*.html) and static files (style.css, …)
// by file name (docs/forms.md).
type Brand struct {
	AppName      string
	Color        string // #rgb or #rrggbb, validated by config
	LogoURL      string // an http(s) URL or a path on this server
	TemplatesDir string
}

func (b Brand) withDefaults() Brand {
	if b.AppName == "" {
		b.AppName = "tollgate"
	}
	if b.Color == "" {
		b.Color = "#2f5bea"
	}
	return b
}

// overlay is an fs.FS that answers from dir first, then from base: the embedded files
// with a team's own beside them.
type overlay struct {
	dir  fs.FS
	base fs.FS
}

func (o overlay) Open(name string) (fs.File, error) {
	if o.dir != nil {
		f, err := o.dir.Open(name)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return o.base.Open(name)
}

// filesOf is the overlay of TEMPLATES_DIR (when set) over one embedded directory.
func (b Brand) filesOf(embedded fs.FS, sub string) (fs.FS, error) {
	base, err := fs.Sub(embedded, sub)
	if err != nil {
		return nil, err
	}
	if b.TemplatesDir == "" {
		return base, nil
	}
	info, err := os.Stat(b.TemplatesDir)
	if err != nil || !info.IsDir() {
		return nil, fmt.Errorf("TEMPLATES_DIR %s: not a readable directory", b.TemplatesDir)
	}
	return overlay{dir: os.DirFS(b.TemplatesDir), base: base}, nil
}

// css is the stylesheet that carries the brand colour. It is a file, not an inline style,
// so that the Content-Security-Policy can keep style-src 'self'.
func (b Brand) css() string {
	return fmt.Sprintf(":root { --accent: %s; --accent-dark: %s; --accent-soft: %s; }\n", b.Color, shade(b.Color, 0.8), tint(b.Color, 0.9))
}

// favicon is a rounded square of the brand colour with the name's first letter.
func (b Brand) favicon() string {
	r, _ := utf8.DecodeRuneInString(b.AppName)
	letter := template.HTMLEscapeString(string(unicode.ToUpper(r)))
	return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="14" fill="` + b.Color +
		`"/><text x="32" y="44" font-family="system-ui,sans-serif" font-size="36" font-weight="700" fill="#fff" text-anchor="middle">` +
		letter + `</text></svg>`
}

// imageSource is what the Content-Security-Policy's img-src must add for the logo: its
// origin when it is on another host.
func (b Brand) imageSource() string {
	u, err := url.Parse(b.LogoURL)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

func (b Brand) serveCSS(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	fmt.Fprint(w, b.css())
}

func (b Brand) serveFavicon(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	fmt.Fprint(w, b.favicon())
}

// shade darkens a hex colour by factor (0.8 = 20 % darker); tint mixes it with white.
func shade(hex string, factor float64) string {
	r, g, b := rgb(hex)
	return fmt.Sprintf("#%02x%02x%02x", int(float64(r)*factor), int(float64(g)*factor), int(float64(b)*factor))
}

func tint(hex string, white float64) string {
	r, g, b := rgb(hex)
	mix := func(c int) int { return int(float64(c) + (255-float64(c))*white) }
	return fmt.Sprintf("#%02x%02x%02x", mix(r), mix(g), mix(b))
}

func rgb(hex string) (int, int, int) {
	h := strings.TrimPrefix(hex, "#")
	if len(h) == 3 {
		h = string([]byte{h[0], h[0], h[1], h[1], h[2], h[2]})
	}
	n, _ := strconv.ParseUint(h, 16, 32)
	return int(n >> 16 & 0xff), int(n >> 8 & 0xff), int(n & 0xff)
}

// emailBreaks writes an e-mail address so that it is never broken while it fits: it is
// one box (class "address", an inline-block), which moves whole to the next line when the
// rest of its line is too short. Only an address wider than the whole line wraps, where a
// reader expects, before the @ and after a dot, rather than mid-word.
func emailBreaks(email string) template.HTML {
	local, domain, ok := strings.Cut(email, "@")
	dotted := func(s string) string {
		parts := strings.Split(s, ".")
		for i := range parts {
			parts[i] = template.HTMLEscapeString(parts[i])
		}
		return strings.Join(parts, ".<wbr>")
	}
	if !ok {
		return template.HTML(`<span class="address">` + dotted(email) + `</span>`)
	}
	return template.HTML(`<span class="address">` + dotted(local) + "<wbr>@" + dotted(domain) + `</span>`)
}
