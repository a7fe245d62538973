package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// ServeProblems is what stops "tollgate serve" from starting with this configuration,
// every problem at once, and the warnings it starts with. The other commands need less:
// "migrate" and "plans sync" run without the webhook secrets.
func (c Config) ServeProblems() (warnings []string, _ error) {
	var errs []error
	fail := func(name, msg string) { errs = append(errs, fmt.Errorf("%s: %s", name, msg)) }
	if c.WebWebhookSecret == "" && c.WebIngestion != IngestSyncEngine {
		fail("WEB_WEBHOOK_SECRET", "is required unless WEB_INGESTION=sync_engine")
	}
	if c.MobileWebhookSecret == "" {
		fail("MOBILE_WEBHOOK_SECRET", "is required")
	}
	if c.DevIdentity && !isLoopbackAddr(c.Addr) {
		fail("AUTH_URL", fmt.Sprintf("is required when ADDR (%s) is not a loopback address: without it tollgate runs a development identity service that signs in any e-mail, which only loopback may reach", c.Addr))
	}
	if c.Reconcile.Interval > 0 && c.Reconcile.Interval < time.Minute {
		warnings = append(warnings, fmt.Sprintf("RECONCILE_INTERVAL=%s is under a minute: a pass starts that soon after the last one finished, reading every subscription each time (RECONCILE_PACE bounds the rate)", c.Reconcile.Interval))
	}
	if c.Env == Production {
		if u, err := url.Parse(c.PublicURL); err != nil || u.Scheme != "https" || u.Host == "" {
			fail("PUBLIC_URL", "want the https:// address users reach the service at in production")
		} else if isLocalHost(u.Hostname()) {
			fail("PUBLIC_URL", "points at this machine; want the public https:// address in production")
		}
		if c.AuthURL == "" && (c.Forms || c.API) {
			fail("AUTH_URL", "is required in production for the forms and the API; set FORMS=off and API=off to run billing only")
		}
		if strings.HasPrefix(c.DatabaseURL, "sqlite:") {
			warnings = append(warnings, "SQLite in production: one instance only, and back up the file (DATABASE_URL=postgres://… for more)")
		}
	}
	return warnings, errors.Join(errs...)
}

// isLoopbackAddr: ADDR's host is a loopback name or address (an empty host is every
// interface).
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

func isLocalHost(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && (addr.IsLoopback() || addr.IsUnspecified())
}
