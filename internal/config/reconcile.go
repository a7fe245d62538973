package config

import (
	"strconv"
	"time"
)

// Reconcile is how serve keeps billing in step with the providers' own APIs.
type Reconcile struct {
	// Interval (RECONCILE_INTERVAL) is how often a pass over each provider runs inside
	// serve; zero (unset, or 0) is off. A provider is reconciled when its own API settings
	// are set (WEB_API_KEY; the App Store's key; Google Play's service account), none
	// needing another. Any interval of a second or more works (Pace bounds the provider's
	// load); under a minute is unusual and warned about.
	Interval time.Duration
	// Pace (RECONCILE_PACE) is at most how many requests a second a pass sends; a store's
	// own limit caps it.
	Pace int
}

func loadReconcile(get func(name, def string) string, fail func(name, format string, args ...any)) Reconcile {
	r := Reconcile{Pace: 20}
	if raw := get("RECONCILE_INTERVAL", ""); raw != "" && raw != "0" {
		d, err := time.ParseDuration(raw)
		if err != nil || d < time.Second {
			fail("RECONCILE_INTERVAL", "want a duration of a second or more such as 6h, or 0 for off, got %q", raw)
		} else {
			r.Interval = d
		}
	}
	if raw := get("RECONCILE_PACE", ""); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > 100 {
			fail("RECONCILE_PACE", "want requests per second from 1 to 100, got %q", raw)
		} else {
			r.Pace = n
		}
	}
	return r
}
