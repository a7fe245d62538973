package config

import (
	"fmt"
	"slices"
	"strings"
)

// Names are the variables tollgate reads (docs/configuration.md has a row for each; a test
// keeps this list and Load in step).
var names = []string{
	"ADDR", "ADMIN_EMAILS", "API", "APPSTORE_API_BASE", "APPSTORE_BUNDLE_ID", "APPSTORE_ENVIRONMENTS",
	"APPSTORE_ISSUER_ID", "APPSTORE_KEY_ID", "APPSTORE_PRIVATE_KEY_FILE", "APPSTORE_ROOT_CERTS",
	"APPSTORE_TEST_CHAIN", "APP_ENV", "APP_NAME", "ARCHIVE_DIR", "AUTH_API_KEY", "AUTH_HOOK_SECRET",
	"AUTH_JWKS_URL", "AUTH_JWT_AUDIENCE", "AUTH_JWT_ISSUER", "AUTH_JWT_SECRET", "AUTH_URL", "AUTO_MIGRATE",
	"BILLING_ANSWER_MAX_AGE", "BILLING_MOUNT", "BRAND_COLOR", "BRAND_LOGO_URL", "CHECKOUT_REDIRECT_ORIGINS",
	"CORS_ORIGINS", "DATABASE_URL", "DB_TIMEOUT", "ENTITLEMENT_TOKEN_AUDIENCE", "ENTITLEMENT_TOKEN_TTL",
	"EVENT_RETENTION", "EVENT_RETENTION_UNRESOLVED", "FORMS", "INGEST_BATCH_SIZE", "INGEST_BATCH_WAIT",
	"LISTEN_FDS", "LISTEN_PID", "LOG_FORMAT", "LOG_LEVEL", "METRICS_ADDR", "MOBILE_EVENT_ALIASES",
	"MOBILE_WEBHOOK_SECRET", "OAUTH_PROVIDERS", "OUTBOUND_WEBHOOK_SECRET", "OUTBOUND_WEBHOOK_TIMEOUT",
	"OUTBOUND_WEBHOOK_URL", "PADDLE_API_BASE", "PADDLE_API_KEY", "PADDLE_WEBHOOK_SECRET", "PLANS_FILE",
	"PLAY_API_BASE", "PLAY_PACKAGE_NAME", "PLAY_PUSH_AUDIENCE", "PLAY_PUSH_JWKS_URL", "PLAY_PUSH_SERVICE_ACCOUNT",
	"PLAY_SERVICE_ACCOUNT_JSON", "PORT", "PUBLIC_URL", "RECONCILE_INTERVAL", "RECONCILE_PACE", "REDIS_URL",
	"SHUTDOWN_TIMEOUT", "SWAGGER_UI_ENABLED", "SYNC_ENGINE_SCHEMA", "TEMPLATES_DIR", "TRUSTED_PROXIES",
	"WEBHOOK_MAX_BODY", "WEB_API_BASE", "WEB_API_KEY", "WEB_INGESTION", "WEB_WEBHOOK_SECRET",
}

// IsVariable says whether name is one of tollgate's variables.
func IsVariable(name string) bool { return slices.Contains(names, name) }

// usual are variables a shell, a container platform or a CI runner sets, which must never
// be taken for a mistyped setting however close their names come to one.
var usual = map[string]bool{
	"PATH": true, "HOME": true, "HOSTNAME": true, "USER": true, "LOGNAME": true, "SHELL": true, "PWD": true,
	"OLDPWD": true, "TERM": true, "LANG": true, "LANGUAGE": true, "TMPDIR": true, "TZ": true, "SHLVL": true,
	"EDITOR": true, "PAGER": true, "DISPLAY": true, "COLUMNS": true, "LINES": true, "MAIL": true,
	"GOPATH": true, "GOROOT": true, "GOFLAGS": true, "GOCACHE": true, "GOPROXY": true, "GOTOOLCHAIN": true,
	"CI": true, "HOST": true, "KUBERNETES_PORT": true, "KUBERNETES_SERVICE_HOST": true, "KUBERNETES_SERVICE_PORT": true,
	"K_SERVICE": true, "K_REVISION": true, "K_CONFIGURATION": true, "FLY_APP_NAME": true, "DYNO": true,
	"RAILWAY_ENVIRONMENT": true, "RENDER": true, "INVOCATION_ID": true, "JOURNAL_STREAM": true,
	"LISTEN_FDNAMES": true, "NOTIFY_SOCKET": true, "SSL_CERT_FILE": true, "SSL_CERT_DIR": true,
}

// nearMissLength is the shortest name compared: shorter ones (API, PORT, FORMS) are a
// letter or two from too many ordinary words.
const nearMissLength = 6

// NearMisses are warnings for variables set (names) that are not tollgate's but are
// within an edit distance of 2 of one of its variables, naming the one each resembles,
// never a value: a mistyped name is otherwise silently ignored and its default used.
func NearMisses(set []string) []string {
	var warnings []string
	for _, name := range set {
		if len(name) < nearMissLength || usual[name] || slices.Contains(names, name) || strings.HasPrefix(name, "LC_") {
			continue
		}
		if like, ok := resembles(name); ok {
			warnings = append(warnings, fmt.Sprintf("%s is set but is not one of tollgate's variables, so it is ignored: did you mean %s?", name, like))
		}
	}
	slices.Sort(warnings)
	return warnings
}

// resembles is tollgate's variable closest to name within an edit distance of 2.
func resembles(name string) (string, bool) {
	best, bestDistance := "", 3
	for _, known := range names {
		if len(known) < nearMissLength {
			continue
		}
		if d := editDistance(name, known); d < bestDistance {
			best, bestDistance = known, d
		}
	}
	return best, best != ""
}

// editDistance is the Levenshtein distance between a and b (ASCII names).
func editDistance(a, b string) int {
	previous := make([]int, len(b)+1)
	current := make([]int, len(b)+1)
	for j := range previous {
		previous[j] = j
	}
	for i := 1; i <= len(a); i++ {
		current[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			current[j] = min(previous[j]+1, current[j-1]+1, previous[j-1]+cost)
		}
		previous, current = current, previous
	}
	return previous[len(b)]
}
