package config

import (
	"net/url"
	"strings"
)

// Paddle's API: live, and the sandbox its sandbox keys belong to.
const (
	PaddleLiveAPI    = "https://api.paddle.com"
	PaddleSandboxAPI = "https://sandbox-api.paddle.com"
)

// Paddle is Paddle Billing's configuration.
type Paddle struct {
	// WebhookSecrets (PADDLE_WEBHOOK_SECRET, a comma list: several notification
	// destinations, or a secret being rotated) turn Paddle on: without one its route is
	// not there.
	WebhookSecrets []string
	// APIKey (PADDLE_API_KEY) lets tollgate read subscriptions (reconcile) and make
	// checkouts and portal sessions; APIBase (PADDLE_API_BASE) is the API it calls: by
	// default the one the key's prefix names (pdl_live_…, pdl_sdbx_…).
	APIKey, APIBase string
	// Dev: in development, with no key, tollgate's stand-in for Paddle's API answers
	// (DevPaddlePath).
	Dev bool
}

// On says whether Paddle is heard.
func (p Paddle) On() bool { return len(p.WebhookSecrets) > 0 }

// DevPaddlePath is where serve mounts its stand-in for Paddle's API in development.
const DevPaddlePath = "/_dev/paddle"

func loadPaddle(v *vars, c *Config) {
	p := Paddle{WebhookSecrets: splitList(v.get("PADDLE_WEBHOOK_SECRET", "")), APIKey: v.get("PADDLE_API_KEY", "")}
	p.APIBase = strings.TrimRight(v.get("PADDLE_API_BASE", ""), "/")
	if p.APIBase != "" {
		if u, err := url.Parse(p.APIBase); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			v.fail("PADDLE_API_BASE", "want Paddle's API base URL, such as %s, got %q", PaddleLiveAPI, p.APIBase)
		}
	}
	switch {
	case p.APIKey == "" && p.On() && c.Env == Development && isLoopbackAddr(c.Addr):
		p.Dev, p.APIKey = true, "pdl_dev_apikey_standin"
		if p.APIBase == "" {
			p.APIBase = c.PublicURL + DevPaddlePath
		}
	case p.APIKey == "" || p.APIBase != "":
	case strings.HasPrefix(p.APIKey, "pdl_sdbx_"):
		p.APIBase = PaddleSandboxAPI
	case strings.HasPrefix(p.APIKey, "pdl_live_"):
		p.APIBase = PaddleLiveAPI
	default:
		v.fail("PADDLE_API_BASE", "is required with a PADDLE_API_KEY whose prefix says neither live (pdl_live_) nor sandbox (pdl_sdbx_): %s or %s",
			PaddleLiveAPI, PaddleSandboxAPI)
	}
	c.Paddle = p
}
