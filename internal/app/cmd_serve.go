package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"strings"

	"github.com/tollgate/tollgate/internal/billing/plans"
)

func cmdServe(*flag.FlagSet) command {
	return command{
		help: "Runs the HTTP server until SIGINT or SIGTERM, then lets in-flight requests finish.\n" +
			"It logs where it listens, the database and, as warnings, what it will lack.",
		run: serve,
	}
}

func serve(ctx context.Context, e env) error {
	srv, err := start(ctx, e)
	if err != nil {
		return err
	}
	if e.listener != nil {
		defer srv.Close()
		return srv.Serve(ctx, e.listener)
	}
	return srv.ListenAndServe(ctx)
}

// startupWarnings names, one line each, what the server will not be able to do as it is
// configured, so that a first run explains itself instead of failing later in a browser.
func startupWarnings(e env, list []plans.PlanConfig, plansErr error) []string {
	var out []string
	if e.devEnvLooked != "" {
		out = append(out, fmt.Sprintf("no %s at %s: running on the environment alone (run from the repository root for the development defaults)", DevEnvFile, e.devEnvLooked))
	}
	if e.cfg.AuthURL == "" && (e.cfg.Forms || e.cfg.API) {
		out = append(out, "no AUTH_URL: the sign-in forms and /api/v1 cannot work until it names the identity service (billing works)")
	}
	switch {
	case errors.Is(plansErr, fs.ErrNotExist):
		out = append(out, fmt.Sprintf("no plans file at PLANS_FILE=%s: no price maps to a plan, so every paid event stays unresolved", e.cfg.PlansFile))
	case plansErr != nil:
		out = append(out, strings.ReplaceAll(plansErr.Error(), "\n", "; "))
	}
	var unpriced []string
	for _, p := range list {
		if !p.Default && len(p.WebPrices) == 0 && len(p.MobileProducts) == 0 {
			unpriced = append(unpriced, p.Key)
		}
	}
	if len(unpriced) > 0 {
		out = append(out, fmt.Sprintf("plans without prices (no web_prices or mobile_products): %s: no purchase can reach them", strings.Join(unpriced, ", ")))
	}
	return out
}

// localURL is a URL a browser on this machine can open for the listening address: the
// unspecified address (":8080") is reached at 127.0.0.1.
func localURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// providersOn names the providers the server hears, comma-separated, each with its
// store's note (Google Play's development stand-in, the web store's sync engine).
func (s *Server) providersOn() string {
	var on []string
	for _, p := range s.billing.stores {
		name := p.Name
		if p.Note != nil {
			if note := p.Note(s.cfg); note != "" {
				name += " (" + note + ")"
			}
		}
		on = append(on, name)
	}
	return strings.Join(on, ",")
}

// reconcileSetting says which providers the server reconciles and how often, or off.
func (s *Server) reconcileSetting() string {
	var on []string
	for _, store := range s.stores {
		on = append(on, store.provider)
	}
	if len(on) == 0 || s.cfg.Reconcile.Interval <= 0 {
		return "off"
	}
	return strings.Join(on, ",") + " every " + s.cfg.Reconcile.Interval.String()
}
