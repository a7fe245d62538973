// Package config turns the process environment into one validated Config value.
// Every problem is reported at once, naming the variable, and no secret value is ever
// part of an error message.
package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Environments.
const (
	Development = "development"
	Test        = "test"
	Production  = "production"
)

// DevIdentityPath is where the development identity service is served (see DevIdentity).
const DevIdentityPath = "/_dev/auth"

// DevPlayPath is where the development stand-in for Google Play is served (see
// PlayStore.Dev).
const DevPlayPath = "/_dev/play"

// Web ingestion modes.
const (
	IngestWebhook    = "webhook"
	IngestSyncEngine = "sync_engine"
)

// Config is parsed once at start-up and passed down by value.
type Config struct {
	Env       string
	Addr      string
	PublicURL string

	DatabaseURL string
	AutoMigrate bool
	// DBTimeout bounds every database call made for a request.
	DBTimeout time.Duration
	// BillingAnswerMaxAge is how long serve may keep a user's billing answer in memory;
	// 0 keeps none (docs/configuration.md).
	BillingAnswerMaxAge time.Duration
	// ShutdownTimeout is the grace in-flight requests get after SIGINT or SIGTERM.
	ShutdownTimeout time.Duration
	// MetricsAddr, when set, is the only listener that serves /metrics.
	MetricsAddr string
	// ListenFD: serve on the listening socket the process was started with, file
	// descriptor 3, instead of opening Addr: LISTEN_FDS=1, as systemd's socket activation
	// sets it (with LISTEN_PID, which must then be this process's id).
	ListenFD bool

	AuthURL         string
	AuthAPIKey      string
	AuthJWKSURL     string
	AuthJWTIssuer   string
	AuthJWTAudience string
	AuthJWTSecret   string
	// DevIdentity: tollgate serves its own development identity service under /_dev/auth
	// and uses it for the forms and the API. Only in development, with AUTH_URL and
	// AUTH_JWKS_URL unset and the forms or the API on; serve refuses it off loopback.
	DevIdentity bool

	WebWebhookSecret    string
	MobileWebhookSecret string
	WebIngestion        string
	SyncEngineSchema    string
	BillingMount        string
	WebhookMaxBody      int64
	MobileEventAliases  map[string]string
	PlansFile           string
	// AppStore and PlayStore hear the stores directly; each is off without its app's id.
	AppStore  AppStore
	PlayStore PlayStore
	// WebAPIKey and WebAPIBase reach the web provider's API (billing backfill): a secret
	// key, or a restricted one, and the API's base URL (tests point it at a local server).
	WebAPIKey  string
	WebAPIBase string
	// CheckoutRedirectOrigins are origins (scheme://host[:port]) besides PUBLIC_URL's that a
	// checkout's success and cancel URLs may point to.
	CheckoutRedirectOrigins []string

	// OutboundWebhookURL, when set, is where every change of a user's billing answer is
	// delivered, signed with OutboundWebhookSecret (the key behind "whsec_", decoded).
	OutboundWebhookURL    string
	OutboundWebhookSecret []byte
	// OutboundWebhookTimeout bounds one delivery attempt; a delivery claimed by an
	// instance that died goes out again three timeouts later.
	OutboundWebhookTimeout time.Duration

	CORSOrigins      []string
	SwaggerUIEnabled bool
	OAuthProviders   []string
	RedisURL         string
	TrustedProxies   []netip.Prefix

	// Forms and API switch the sign-in forms and /api/v1 off (FORMS=off, API=off): a
	// billing-only deployment needs no identity service.
	Forms bool
	API   bool
	// Batching groups webhooks' events into transactions (INGEST_BATCH_*).
	Batching Batching
	// Reconcile keeps billing in step with the providers' APIs (RECONCILE_*).
	Reconcile Reconcile
	// Retention removes stored events past a window (EVENT_RETENTION*, ARCHIVE_DIR).
	Retention Retention
	// HeldAnswers are the entitlement token and the access token's claim
	// (ENTITLEMENT_TOKEN_*, AUTH_HOOK_SECRET).
	HeldAnswers HeldAnswers
	// AdminEmails (ADMIN_EMAILS) are the operators whom the console at /admin lets in,
	// lower-cased; none (or FORMS=off) turns it off.
	AdminEmails []string

	// Branding of the forms (docs/forms.md): the product's name, accent colour, logo, and
	// a directory whose templates and CSS override the embedded ones by file name.
	AppName      string
	BrandColor   string
	BrandLogoURL string
	TemplatesDir string

	LogLevel  slog.Level
	LogFormat string
}

// Load reads the configuration through getenv. It returns every problem found, joined.
func Load(getenv func(string) string) (Config, error) {
	var errs []error
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	fail := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	boolean := func(name string, def bool) bool {
		raw := get(name, "")
		if raw == "" {
			return def
		}
		switch strings.ToLower(raw) {
		case "on", "yes":
			return true
		case "off", "no":
			return false
		}
		v, err := strconv.ParseBool(raw)
		if err != nil {
			fail(name, "want on or off (true or false), got %q", raw)
			return def
		}
		return v
	}

	c := Config{Env: get("APP_ENV", Development)}
	switch c.Env {
	case Development, Test, Production:
	default:
		fail("APP_ENV", "want development, test or production, got %q", c.Env)
	}
	dev := c.Env != Production

	// In development the server listens on loopback only: a laptop on a café network
	// should not serve its sign-in forms to the room.
	host := ""
	if c.Env == Development {
		host = "127.0.0.1"
	}
	c.Addr = get("ADDR", host+":"+get("PORT", "8080"))
	// Unset, PUBLIC_URL is this machine at the listening port, so that links, redirects and
	// "tollgate webhook send" follow PORT or ADDR.
	port := "8080"
	if _, p, err := net.SplitHostPort(c.Addr); err == nil && p != "" {
		port = p
	}
	c.PublicURL = strings.TrimRight(get("PUBLIC_URL", "http://localhost:"+port), "/")
	c.DatabaseURL = get("DATABASE_URL", "sqlite:tollgate.db")
	if path, ok := strings.CutPrefix(c.DatabaseURL, "sqlite://"); ok {
		// A URL with an authority (sqlite://tollgate.db): SQLite would refuse it with an error
		// that shows its driver options, not the fix.
		fail("DATABASE_URL", "want sqlite:PATH, without slashes after the colon (sqlite:%s for a file here)", path)
	} else if !strings.HasPrefix(c.DatabaseURL, "sqlite:") && !strings.HasPrefix(c.DatabaseURL, "postgres://") &&
		!strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		// The value may hold a password: name the variable, not the value.
		fail("DATABASE_URL", "want sqlite:PATH or a postgres:// URL")
	}
	c.AutoMigrate = boolean("AUTO_MIGRATE", true)
	duration := func(name string, def time.Duration) time.Duration {
		raw := get(name, "")
		if raw == "" {
			return def
		}
		d, err := time.ParseDuration(raw)
		if err != nil || d <= 0 {
			fail(name, "want a positive duration such as 5s, got %q", raw)
			return def
		}
		return d
	}
	c.DBTimeout = duration("DB_TIMEOUT", 5*time.Second)
	if raw := get("BILLING_ANSWER_MAX_AGE", ""); raw == "0" {
		c.BillingAnswerMaxAge = 0
	} else {
		c.BillingAnswerMaxAge = duration("BILLING_ANSWER_MAX_AGE", 30*time.Second)
	}
	c.ShutdownTimeout = duration("SHUTDOWN_TIMEOUT", 25*time.Second)
	c.MetricsAddr = get("METRICS_ADDR", "")
	switch fds, pid := get("LISTEN_FDS", ""), get("LISTEN_PID", ""); {
	case fds == "":
	case fds != "1":
		fail("LISTEN_FDS", "want 1 (one listening socket, file descriptor 3), got %q", fds)
	case pid == "" || pid == strconv.Itoa(os.Getpid()):
		c.ListenFD = true
	}

	c.AuthURL = strings.TrimRight(get("AUTH_URL", ""), "/")
	c.AuthAPIKey = get("AUTH_API_KEY", "")
	c.AuthJWKSURL = get("AUTH_JWKS_URL", "")
	c.Forms = boolean("FORMS", true)
	c.API = boolean("API", true)
	c.AdminEmails = loadAdminEmails(get, fail, c.Forms)
	c.Reconcile = loadReconcile(get, fail)
	c.Retention = loadRetention(get, fail)
	c.HeldAnswers = loadHeldAnswers(get, fail)
	c.Batching = loadBatching(get, fail)
	c.DevIdentity = c.Env == Development && c.AuthURL == "" && c.AuthJWKSURL == "" && (c.Forms || c.API)
	if c.DevIdentity {
		c.AuthURL = c.PublicURL + DevIdentityPath
	}
	if c.AuthJWKSURL == "" && c.AuthURL != "" {
		c.AuthJWKSURL = c.AuthURL + "/.well-known/jwks.json"
	}
	c.AuthJWTIssuer = get("AUTH_JWT_ISSUER", c.AuthURL)
	c.AuthJWTAudience = get("AUTH_JWT_AUDIENCE", "authenticated")
	c.AuthJWTSecret = get("AUTH_JWT_SECRET", "")

	c.WebIngestion = get("WEB_INGESTION", IngestWebhook)
	switch c.WebIngestion {
	case IngestWebhook, IngestSyncEngine:
	default:
		fail("WEB_INGESTION", "want webhook or sync_engine, got %q", c.WebIngestion)
	}
	c.WebWebhookSecret = get("WEB_WEBHOOK_SECRET", "")
	c.MobileWebhookSecret = get("MOBILE_WEBHOOK_SECRET", "")
	c.SyncEngineSchema = get("SYNC_ENGINE_SCHEMA", "stripe")
	if !isIdentifier(c.SyncEngineSchema) {
		fail("SYNC_ENGINE_SCHEMA", "want a plain SQL identifier, got %q", c.SyncEngineSchema)
	}
	c.BillingMount = strings.Trim(get("BILLING_MOUNT", "billing"), "/")
	if c.BillingMount == "" || strings.ContainsAny(c.BillingMount, "/?#{} ") {
		fail("BILLING_MOUNT", "want a single path segment, got %q", c.BillingMount)
	}
	maxBody, err := ParseSize(get("WEBHOOK_MAX_BODY", "1MiB"))
	if err != nil {
		fail("WEBHOOK_MAX_BODY", "%v", err)
	}
	c.WebhookMaxBody = maxBody
	c.MobileEventAliases, err = parseAliases(get("MOBILE_EVENT_ALIASES", "subscription_renewal_cancelled=subscription_cancelled"))
	if err != nil {
		fail("MOBILE_EVENT_ALIASES", "%v", err)
	}
	c.PlansFile = get("PLANS_FILE", "config/plans.yml")
	c.AppStore = loadAppStore(get, fail)
	c.PlayStore = loadPlayStore(get, fail)
	if c.Env == Development && c.PlayStore.PackageName == "" && isLoopbackAddr(c.Addr) {
		c.PlayStore = devPlayStore(c.PublicURL, c.BillingMount)
	}
	c.WebAPIKey = get("WEB_API_KEY", "")
	c.WebAPIBase = strings.TrimRight(get("WEB_API_BASE", "https://api.stripe.com"), "/")
	if u, err := url.Parse(c.WebAPIBase); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		fail("WEB_API_BASE", "want the provider API's base URL, such as https://api.stripe.com, got %q", c.WebAPIBase)
	}
	for _, origin := range splitList(get("CHECKOUT_REDIRECT_ORIGINS", "")) {
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.TrimRight(u.Path, "/") != "" || u.RawQuery != "" || u.User != nil {
			fail("CHECKOUT_REDIRECT_ORIGINS", "want origins such as https://app.example.com, got %q", origin)
			continue
		}
		c.CheckoutRedirectOrigins = append(c.CheckoutRedirectOrigins, strings.TrimRight(origin, "/"))
	}

	c.OutboundWebhookURL = get("OUTBOUND_WEBHOOK_URL", "")
	if c.OutboundWebhookURL != "" {
		switch u, err := url.Parse(c.OutboundWebhookURL); {
		case err == nil && u.User != nil: // not quoted: it holds a password
			fail("OUTBOUND_WEBHOOK_URL", "want the http(s) URL of your backend's endpoint, without credentials (put a token in the path or query)")
		case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
			fail("OUTBOUND_WEBHOOK_URL", "want the http(s) URL of your backend's endpoint, got %q", c.OutboundWebhookURL)
		}
		secret, err := parseWebhookSecret(get("OUTBOUND_WEBHOOK_SECRET", ""))
		if err != nil {
			fail("OUTBOUND_WEBHOOK_SECRET", "%v", err)
		}
		c.OutboundWebhookSecret = secret
	}
	c.OutboundWebhookTimeout = duration("OUTBOUND_WEBHOOK_TIMEOUT", 10*time.Second)
	if c.OutboundWebhookTimeout > time.Minute {
		fail("OUTBOUND_WEBHOOK_TIMEOUT", "want at most 1m: a crashed instance's deliveries wait three of them, got %s", c.OutboundWebhookTimeout)
	}

	if raw := get("CORS_ORIGINS", ""); raw != "" {
		c.CORSOrigins = splitList(raw)
	}
	c.SwaggerUIEnabled = boolean("SWAGGER_UI_ENABLED", dev)
	c.OAuthProviders = splitList(get("OAUTH_PROVIDERS", ""))
	c.RedisURL = get("REDIS_URL", "")
	for _, raw := range splitList(get("TRUSTED_PROXIES", "")) {
		p, err := netip.ParsePrefix(raw)
		if err != nil {
			addr, aerr := netip.ParseAddr(raw)
			if aerr != nil {
				fail("TRUSTED_PROXIES", "%q is not a CIDR or address", raw)
				continue
			}
			p = netip.PrefixFrom(addr, addr.BitLen())
		}
		c.TrustedProxies = append(c.TrustedProxies, p.Masked())
	}

	c.AppName = get("APP_NAME", "tollgate")
	c.BrandColor = get("BRAND_COLOR", "#2f5bea")
	if !isHexColor(c.BrandColor) {
		fail("BRAND_COLOR", "want a hex colour such as #4f46e5, got %q", c.BrandColor)
	}
	c.BrandLogoURL = get("BRAND_LOGO_URL", "")
	if c.BrandLogoURL != "" && !isLogoURL(c.BrandLogoURL) {
		fail("BRAND_LOGO_URL", "want an https:// or http:// URL or a path starting with /, got %q", c.BrandLogoURL)
	}
	c.TemplatesDir = get("TEMPLATES_DIR", "")

	if err := c.LogLevel.UnmarshalText([]byte(get("LOG_LEVEL", "info"))); err != nil {
		fail("LOG_LEVEL", "want debug, info, warn or error")
	}
	defFormat := "text"
	if !dev {
		defFormat = "json"
	}
	c.LogFormat = get("LOG_FORMAT", defFormat)
	if c.LogFormat != "text" && c.LogFormat != "json" {
		fail("LOG_FORMAT", "want text or json, got %q", c.LogFormat)
	}
	return c, errors.Join(errs...)
}

func isHexColor(s string) bool {
	if len(s) != 4 && len(s) != 7 || s[0] != '#' {
		return false
	}
	for _, r := range s[1:] {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

func isLogoURL(s string) bool {
	if strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") {
		return true
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// parseWebhookSecret decodes a Standard Webhooks secret: "whsec_" and the base64 of 24 to
// 64 random bytes. The secret itself is never quoted back.
func parseWebhookSecret(raw string) ([]byte, error) {
	encoded, ok := strings.CutPrefix(raw, "whsec_")
	if !ok {
		return nil, errors.New(`required when OUTBOUND_WEBHOOK_URL is set: "whsec_" followed by base64 of 24 to 64 random bytes (openssl rand -base64 32)`)
	}
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil || len(key) < 24 || len(key) > 64 {
		return nil, errors.New(`want "whsec_" followed by base64 of 24 to 64 random bytes (openssl rand -base64 32)`)
	}
	return key, nil
}

// ParseSize reads a byte count such as 1048576, 512KiB, 1MiB or 2MB.
func ParseSize(raw string) (int64, error) {
	units := []struct {
		suffix string
		factor int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000_000}, {"GB", 1000_000_000}, {"B", 1}}
	s := strings.TrimSpace(raw)
	factor := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, factor = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.factor
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)/factor {
		return 0, fmt.Errorf("want a positive size such as 1MiB, got %q", raw)
	}
	return n * factor, nil
}

func parseAliases(raw string) (map[string]string, error) {
	aliases := map[string]string{}
	for _, pair := range splitList(raw) {
		from, to, ok := strings.Cut(pair, "=")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || from == "" || to == "" {
			return nil, fmt.Errorf("want received=handled pairs, got %q", pair)
		}
		aliases[from] = to
	}
	return aliases, nil
}

func splitList(raw string) []string {
	var out []string
	for _, part := range strings.Split(raw, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func isIdentifier(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
