package config

import (
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// loadProcess reads where the process listens and what it runs on.
func loadProcess(v *vars, c *Config) {
	// In development the server listens on loopback only: a laptop on a café network
	// should not serve its sign-in forms to the room.
	host := ""
	if c.Env == Development {
		host = "127.0.0.1"
	}
	c.Addr = v.get("ADDR", "")
	if c.Addr == "" {
		port := v.get("PORT", "8080")
		if !isPort(port) {
			v.fail("PORT", "want a port number from 0 to 65535, got %q (or set ADDR, host:port)", port)
			port = "8080"
		}
		c.Addr = host + ":" + port
	} else if _, port, err := net.SplitHostPort(c.Addr); err != nil || !isPort(port) {
		v.fail("ADDR", "want host:port, such as 127.0.0.1:8080 or :8080, got %q", c.Addr)
	}
	// Unset, PUBLIC_URL is this machine at the listening port, so that links, redirects and
	// "tollgate webhook send" follow PORT or ADDR.
	port := "8080"
	if _, p, err := net.SplitHostPort(c.Addr); err == nil && p != "" {
		port = p
	}
	c.PublicURL = strings.TrimRight(v.get("PUBLIC_URL", "http://localhost:"+port), "/")
	c.DatabaseURL = v.get("DATABASE_URL", "sqlite:tollgate.db")
	if path, ok := strings.CutPrefix(c.DatabaseURL, "sqlite://"); ok {
		// A URL with an authority (sqlite://tollgate.db): SQLite would refuse it with an error
		// that shows its driver options, not the fix.
		v.fail("DATABASE_URL", "want sqlite:PATH, without slashes after the colon (sqlite:%s for a file here)", path)
	} else if !strings.HasPrefix(c.DatabaseURL, "sqlite:") && !strings.HasPrefix(c.DatabaseURL, "postgres://") &&
		!strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		// The value may hold a password: name the variable, not the value.
		v.fail("DATABASE_URL", "want sqlite:PATH or a postgres:// URL")
	}
	c.AutoMigrate = v.boolean("AUTO_MIGRATE", true)
	c.DBTimeout = v.duration("DB_TIMEOUT", 5*time.Second)
	if raw := v.get("BILLING_ANSWER_MAX_AGE", ""); raw == "0" {
		c.BillingAnswerMaxAge = 0
	} else {
		c.BillingAnswerMaxAge = v.duration("BILLING_ANSWER_MAX_AGE", 30*time.Second)
	}
	c.ShutdownTimeout = v.duration("SHUTDOWN_TIMEOUT", 25*time.Second)
	c.MetricsAddr = v.get("METRICS_ADDR", "")
	switch fds, pid := v.get("LISTEN_FDS", ""), v.get("LISTEN_PID", ""); {
	case fds == "":
	case fds != "1":
		v.fail("LISTEN_FDS", "want 1 (one listening socket, file descriptor 3), got %q", fds)
	case pid == "" || pid == strconv.Itoa(os.Getpid()):
		c.ListenFD = true
	}
}

// isPort says whether s is a TCP port number (0: any free port).
func isPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n <= 65535 && strconv.Itoa(n) == s
}

// loadIdentity reads the identity service and the surfaces over it.
func loadIdentity(v *vars, c *Config) {
	c.AuthURL = strings.TrimRight(v.get("AUTH_URL", ""), "/")
	c.AuthAPIKey = v.get("AUTH_API_KEY", "")
	c.AuthJWKSURL = v.get("AUTH_JWKS_URL", "")
	c.Forms = v.boolean("FORMS", true)
	c.API = v.boolean("API", true)
	c.DevIdentity = c.Env == Development && c.AuthURL == "" && c.AuthJWKSURL == "" && (c.Forms || c.API)
	if c.DevIdentity {
		c.AuthURL = c.PublicURL + DevIdentityPath
	}
	if c.AuthJWKSURL == "" && c.AuthURL != "" {
		c.AuthJWKSURL = c.AuthURL + "/.well-known/jwks.json"
	}
	c.AuthJWTIssuer = v.get("AUTH_JWT_ISSUER", c.AuthURL)
	c.AuthJWTAudience = v.get("AUTH_JWT_AUDIENCE", "authenticated")
	c.AuthJWTSecret = v.get("AUTH_JWT_SECRET", "")
}

// loadBilling reads the providers' webhooks and APIs, and the plans file.
func loadBilling(v *vars, c *Config) {
	c.WebIngestion = v.get("WEB_INGESTION", IngestWebhook)
	switch c.WebIngestion {
	case IngestWebhook, IngestSyncEngine:
	default:
		v.fail("WEB_INGESTION", "want webhook or sync_engine, got %q", c.WebIngestion)
	}
	c.WebWebhookSecret = v.get("WEB_WEBHOOK_SECRET", "")
	c.MobileWebhookSecret = v.get("MOBILE_WEBHOOK_SECRET", "")
	c.SyncEngineSchema = v.get("SYNC_ENGINE_SCHEMA", "stripe")
	if !isIdentifier(c.SyncEngineSchema) {
		v.fail("SYNC_ENGINE_SCHEMA", "want a plain SQL identifier, got %q", c.SyncEngineSchema)
	}
	c.BillingMount = strings.Trim(v.get("BILLING_MOUNT", "billing"), "/")
	if c.BillingMount == "" || strings.ContainsAny(c.BillingMount, "/?#{} ") {
		v.fail("BILLING_MOUNT", "want a single path segment, got %q", c.BillingMount)
	}
	maxBody, err := ParseSize(v.get("WEBHOOK_MAX_BODY", "1MiB"))
	if err != nil {
		v.fail("WEBHOOK_MAX_BODY", "%v", err)
	}
	c.WebhookMaxBody = maxBody
	c.MobileEventAliases, err = parseAliases(v.get("MOBILE_EVENT_ALIASES", "subscription_renewal_cancelled=subscription_cancelled"))
	if err != nil {
		v.fail("MOBILE_EVENT_ALIASES", "%v", err)
	}
	c.PlansFile = v.get("PLANS_FILE", "config/plans.yml")
	c.AppStore = loadAppStore(v.get, v.fail)
	c.PlayStore = loadPlayStore(v.get, v.fail)
	if c.Env == Development && c.PlayStore.PackageName == "" && isLoopbackAddr(c.Addr) {
		c.PlayStore = devPlayStore(c.PublicURL, c.BillingMount)
	}
	loadPaddle(v, c)
	c.WebAPIKey = v.get("WEB_API_KEY", "")
	c.WebAPIBase = strings.TrimRight(v.get("WEB_API_BASE", "https://api.stripe.com"), "/")
	if u, err := url.Parse(c.WebAPIBase); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		v.fail("WEB_API_BASE", "want the provider API's base URL, such as https://api.stripe.com, got %q", c.WebAPIBase)
	}
	for _, origin := range splitList(v.get("CHECKOUT_REDIRECT_ORIGINS", "")) {
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.TrimRight(u.Path, "/") != "" || u.RawQuery != "" || u.User != nil {
			v.fail("CHECKOUT_REDIRECT_ORIGINS", "want origins such as https://app.example.com, got %q", origin)
			continue
		}
		c.CheckoutRedirectOrigins = append(c.CheckoutRedirectOrigins, strings.TrimRight(origin, "/"))
	}
}

// loadOutbound reads the outbound webhooks to the app's backend.
func loadOutbound(v *vars, c *Config) {
	c.OutboundWebhookURL = v.get("OUTBOUND_WEBHOOK_URL", "")
	if c.OutboundWebhookURL != "" {
		switch u, err := url.Parse(c.OutboundWebhookURL); {
		case err == nil && u.User != nil: // not quoted: it holds a password
			v.fail("OUTBOUND_WEBHOOK_URL", "want the http(s) URL of your backend's endpoint, without credentials (put a token in the path or query)")
		case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
			v.fail("OUTBOUND_WEBHOOK_URL", "want the http(s) URL of your backend's endpoint, got %q", c.OutboundWebhookURL)
		}
		secret, err := parseWebhookSecret(v.get("OUTBOUND_WEBHOOK_SECRET", ""))
		if err != nil {
			v.fail("OUTBOUND_WEBHOOK_SECRET", "%v", err)
		}
		c.OutboundWebhookSecret = secret
	}
	c.OutboundWebhookTimeout = v.duration("OUTBOUND_WEBHOOK_TIMEOUT", 10*time.Second)
	if c.OutboundWebhookTimeout > time.Minute {
		v.fail("OUTBOUND_WEBHOOK_TIMEOUT", "want at most 1m: a crashed instance's deliveries wait three of them, got %s", c.OutboundWebhookTimeout)
	}
}

// loadHTTP reads what the HTTP surfaces allow: origins, docs, OAuth providers, the shared
// throttle store and the proxies trusted for the client's address.
func loadHTTP(v *vars, c *Config) {
	if raw := v.get("CORS_ORIGINS", ""); raw != "" {
		c.CORSOrigins = splitList(raw)
	}
	c.SwaggerUIEnabled = v.boolean("SWAGGER_UI_ENABLED", c.Env != Production)
	c.OAuthProviders = splitList(v.get("OAUTH_PROVIDERS", ""))
	c.RedisURL = v.get("REDIS_URL", "")
	for _, raw := range splitList(v.get("TRUSTED_PROXIES", "")) {
		p, err := netip.ParsePrefix(raw)
		if err != nil {
			addr, aerr := netip.ParseAddr(raw)
			if aerr != nil {
				v.fail("TRUSTED_PROXIES", "%q is not a CIDR or address", raw)
				continue
			}
			p = netip.PrefixFrom(addr, addr.BitLen())
		}
		c.TrustedProxies = append(c.TrustedProxies, p.Masked())
	}
}

// loadLook reads the forms' branding and the logs' level and format.
func loadLook(v *vars, c *Config) {
	c.AppName = v.get("APP_NAME", "tollgate")
	c.BrandColor = v.get("BRAND_COLOR", "#2f5bea")
	if !isHexColor(c.BrandColor) {
		v.fail("BRAND_COLOR", "want a hex colour such as #4f46e5, got %q", c.BrandColor)
	}
	c.BrandLogoURL = v.get("BRAND_LOGO_URL", "")
	if c.BrandLogoURL != "" && !isLogoURL(c.BrandLogoURL) {
		v.fail("BRAND_LOGO_URL", "want an https:// or http:// URL or a path starting with /, got %q", c.BrandLogoURL)
	}
	c.TemplatesDir = v.get("TEMPLATES_DIR", "")
	if err := c.LogLevel.UnmarshalText([]byte(v.get("LOG_LEVEL", "info"))); err != nil {
		v.fail("LOG_LEVEL", "want debug, info, warn or error")
	}
	defFormat := "text"
	if c.Env == Production {
		defFormat = "json"
	}
	c.LogFormat = v.get("LOG_FORMAT", defFormat)
	if c.LogFormat != "text" && c.LogFormat != "json" {
		v.fail("LOG_FORMAT", "want text or json, got %q", c.LogFormat)
	}
}
