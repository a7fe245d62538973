// Package config turns the process environment into one validated Config value.
// Every problem is reported at once, naming the variable, and no secret value is ever
// part of an error message.
package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
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
	// Paddle is Paddle Billing, a web store beside the web provider; off without its
	// webhook secret.
	Paddle Paddle
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
	v := &vars{getenv: getenv}
	c := Config{Env: v.get("APP_ENV", Development)}
	switch c.Env {
	case Development, Test, Production:
	default:
		v.fail("APP_ENV", "want development, test or production, got %q", c.Env)
	}
	loadProcess(v, &c)
	loadIdentity(v, &c)
	c.AdminEmails = loadAdminEmails(v.get, v.fail, c.Forms)
	c.Reconcile = loadReconcile(v.get, v.fail)
	c.Retention = loadRetention(v.get, v.fail)
	c.HeldAnswers = loadHeldAnswers(v.get, v.fail)
	c.Batching = loadBatching(v.get, v.fail)
	loadBilling(v, &c)
	loadOutbound(v, &c)
	loadHTTP(v, &c)
	loadLook(v, &c)
	return c, errors.Join(v.errs...)
}

// vars reads the environment's variables, collecting every problem found.
type vars struct {
	getenv func(string) string
	errs   []error
}

// get is the variable's value, trimmed, or def when it is unset or blank.
func (v *vars) get(name, def string) string {
	if value := strings.TrimSpace(v.getenv(name)); value != "" {
		return value
	}
	return def
}

// fail records a problem with the variable name; format never quotes a secret.
func (v *vars) fail(name, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
}

// boolean reads on/off, yes/no or a Go boolean.
func (v *vars) boolean(name string, def bool) bool {
	raw := v.get(name, "")
	if raw == "" {
		return def
	}
	switch strings.ToLower(raw) {
	case "on", "yes":
		return true
	case "off", "no":
		return false
	}
	b, err := strconv.ParseBool(raw)
	if err != nil {
		v.fail(name, "want on or off (true or false), got %q", raw)
		return def
	}
	return b
}

// duration reads a positive Go duration.
func (v *vars) duration(name string, def time.Duration) time.Duration {
	raw := v.get(name, "")
	if raw == "" {
		return def
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d <= 0 {
		v.fail(name, "want a positive duration such as 5s, got %q", raw)
		return def
	}
	return d
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
