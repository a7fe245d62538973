package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadDefaults(t *testing.T) {
	c, err := Load(env(map[string]string{"WEB_WEBHOOK_SECRET": "w", "MOBILE_WEBHOOK_SECRET": "m", "AUTH_URL": "https://x.supabase.co/auth/v1/"}))
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string][2]any{
		"Env":             {c.Env, Development},
		"Addr":            {c.Addr, "127.0.0.1:8080"},
		"Forms":           {c.Forms, true},
		"API":             {c.API, true},
		"AppName":         {c.AppName, "tollgate"},
		"DatabaseURL":     {c.DatabaseURL, "sqlite:tollgate.db"},
		"AutoMigrate":     {c.AutoMigrate, true},
		"BillingMount":    {c.BillingMount, "billing"},
		"WebhookMaxBody":  {c.WebhookMaxBody, int64(1 << 20)},
		"WebIngestion":    {c.WebIngestion, IngestWebhook},
		"AuthJWKSURL":     {c.AuthJWKSURL, "https://x.supabase.co/auth/v1/.well-known/jwks.json"},
		"AuthJWTIssuer":   {c.AuthJWTIssuer, "https://x.supabase.co/auth/v1"},
		"AuthJWTAudience": {c.AuthJWTAudience, "authenticated"},
		"alias":           {c.MobileEventAliases["subscription_renewal_cancelled"], "subscription_cancelled"},
		"LogFormat":       {c.LogFormat, "text"},
		"SwaggerUI":       {c.SwaggerUIEnabled, true},
		"DBTimeout":       {c.DBTimeout, 5 * time.Second},
		"AnswerMaxAge":    {c.BillingAnswerMaxAge, 30 * time.Second},
		"ShutdownTimeout": {c.ShutdownTimeout, 25 * time.Second},
		"MetricsAddr":     {c.MetricsAddr, ""},
		"WebAPIBase":      {c.WebAPIBase, "https://api.stripe.com"},
	}
	for name, pair := range checks {
		if pair[0] != pair[1] {
			t.Errorf("%s = %v, want %v", name, pair[0], pair[1])
		}
	}
	c, _ = Load(env(map[string]string{"PORT": "9000", "APP_ENV": "production", "WEB_WEBHOOK_SECRET": "w", "MOBILE_WEBHOOK_SECRET": "m"}))
	if c.Addr != ":9000" || c.LogFormat != "json" || c.SwaggerUIEnabled {
		t.Errorf("production defaults: addr %s, log %s, swagger %v", c.Addr, c.LogFormat, c.SwaggerUIEnabled)
	}
}

func TestLoadReportsEveryErrorWithoutSecrets(t *testing.T) {
	_, err := Load(env(map[string]string{
		"APP_ENV":                   "staging",
		"DATABASE_URL":              "mysql://user:hunter2@db/x",
		"WEB_INGESTION":             "polling",
		"WEBHOOK_MAX_BODY":          "lots",
		"TRUSTED_PROXIES":           "10.0.0.0/8,not-an-ip",
		"BILLING_MOUNT":             "a/b",
		"DB_TIMEOUT":                "soon",
		"BILLING_ANSWER_MAX_AGE":    "-1s",
		"SHUTDOWN_TIMEOUT":          "-1s",
		"BRAND_COLOR":               "red;}body{display:none",
		"BRAND_LOGO_URL":            "javascript:alert(1)",
		"FORMS":                     "maybe",
		"WEB_API_BASE":              "api.stripe.com",
		"CHECKOUT_REDIRECT_ORIGINS": "https://ok.example.com,https://app.example.com/path",
		"ADMIN_EMAILS":              "ops@example.com,not an address",
		"RECONCILE_INTERVAL":        "500ms",
		"RECONCILE_PACE":            "0",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, name := range []string{"APP_ENV", "DATABASE_URL", "WEB_INGESTION", "WEBHOOK_MAX_BODY", "TRUSTED_PROXIES", "BILLING_MOUNT", "DB_TIMEOUT", "BILLING_ANSWER_MAX_AGE", "SHUTDOWN_TIMEOUT", "BRAND_COLOR", "BRAND_LOGO_URL", "FORMS", "WEB_API_BASE", "CHECKOUT_REDIRECT_ORIGINS: want origins such as https://app.example.com, got \"https://app.example.com/path\"",
		"ADMIN_EMAILS", "RECONCILE_INTERVAL", "RECONCILE_PACE"} {
		if !strings.Contains(msg, name) {
			t.Errorf("error does not name %s:\n%s", name, msg)
		}
	}
	if strings.Contains(msg, "hunter2") {
		t.Error("a password reached the error message")
	}
}

func TestServeProblems(t *testing.T) {
	secrets := map[string]string{"WEB_WEBHOOK_SECRET": "w", "MOBILE_WEBHOOK_SECRET": "m"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range secrets {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	production := map[string]string{"APP_ENV": "production", "PUBLIC_URL": "https://app.example.com", "AUTH_URL": "https://x.supabase.co/auth/v1",
		"DATABASE_URL": "postgres://db/tollgate"}
	tests := []struct {
		name     string
		env      map[string]string
		errs     []string // every one must be named, all at once
		warnings int
	}{
		{"development needs no identity service", secrets, nil, 0},
		{"no secrets", map[string]string{}, []string{"WEB_WEBHOOK_SECRET", "MOBILE_WEBHOOK_SECRET"}, 0},
		{"sync_engine needs no web secret", map[string]string{"WEB_INGESTION": "sync_engine", "MOBILE_WEBHOOK_SECRET": "m"}, nil, 0},
		{"production as it should be", with(production), nil, 0},
		{"production, all wrong at once", with(map[string]string{"APP_ENV": "production", "PUBLIC_URL": "http://localhost:8080"}),
			[]string{"PUBLIC_URL", "AUTH_URL"}, 1},
		{"production on localhost over https", with(map[string]string{"APP_ENV": "production", "PUBLIC_URL": "https://127.0.0.1", "AUTH_URL": "https://a"}),
			[]string{"PUBLIC_URL: points at this machine"}, 1},
		{"production, billing only", with(map[string]string{"APP_ENV": "production", "PUBLIC_URL": "https://billing.example.com", "FORMS": "off", "API": "off",
			"DATABASE_URL": "postgres://db/x"}), nil, 0},
		{"production, forms off but the API on", with(map[string]string{"APP_ENV": "production", "PUBLIC_URL": "https://billing.example.com", "FORMS": "off",
			"DATABASE_URL": "postgres://db/x"}), []string{"AUTH_URL"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			warnings, err := c.ServeProblems()
			if len(tc.errs) == 0 && err != nil {
				t.Fatalf("refused: %v", err)
			}
			for _, want := range tc.errs {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v does not name %s", err, want)
				}
			}
			if len(warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", warnings, tc.warnings)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1MiB": 1 << 20, "512KiB": 512 << 10, "2MB": 2_000_000, "100": 100, "10 KiB": 10 << 10} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1MiB", "1TiB", "x"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}

func TestOutboundWebhookSettings(t *testing.T) {
	base := map[string]string{"WEB_WEBHOOK_SECRET": "w", "MOBILE_WEBHOOK_SECRET": "m"}
	with := func(extra map[string]string) (Config, error) {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return Load(env(m))
	}
	c, err := with(map[string]string{"OUTBOUND_WEBHOOK_URL": "https://app.example.com/hooks?token=t", "OUTBOUND_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})
	if err != nil || c.OutboundWebhookURL != "https://app.example.com/hooks?token=t" || len(c.OutboundWebhookSecret) != 24 {
		t.Fatalf("valid settings: %v, %q, %d key bytes", err, c.OutboundWebhookURL, len(c.OutboundWebhookSecret))
	}
	if c.OutboundWebhookTimeout != 10*time.Second {
		t.Errorf("default attempt timeout %s, want 10s", c.OutboundWebhookTimeout)
	}
	if c, err := with(map[string]string{"OUTBOUND_WEBHOOK_TIMEOUT": "2s"}); err != nil || c.OutboundWebhookTimeout != 2*time.Second {
		t.Errorf("OUTBOUND_WEBHOOK_TIMEOUT=2s: %v, %s", err, c.OutboundWebhookTimeout)
	}
	for _, raw := range []string{"2m", "0s", "soon"} {
		if _, err := with(map[string]string{"OUTBOUND_WEBHOOK_TIMEOUT": raw}); err == nil || !strings.Contains(err.Error(), "OUTBOUND_WEBHOOK_TIMEOUT: want") {
			t.Errorf("OUTBOUND_WEBHOOK_TIMEOUT=%s: %v, want it refused", raw, err)
		}
	}
	if c, err := with(map[string]string{"OUTBOUND_WEBHOOK_SECRET": "ignored"}); err != nil || c.OutboundWebhookSecret != nil {
		t.Fatalf("a secret without a URL: %v, %v", err, c.OutboundWebhookSecret)
	}
	for _, tc := range []struct{ url, secret, want string }{
		{"https://app.example.com/hooks", "", `OUTBOUND_WEBHOOK_SECRET: required when OUTBOUND_WEBHOOK_URL is set`},
		{"https://app.example.com/hooks", "whsec_c2hvcnQ=", `OUTBOUND_WEBHOOK_SECRET: want "whsec_" followed by base64 of 24 to 64 random bytes`},
		{"https://app.example.com/hooks", "whsec_!!not-base64-at-all-but-long-enough!!", `OUTBOUND_WEBHOOK_SECRET: want "whsec_"`},
		{"app.example.com/hooks", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", `OUTBOUND_WEBHOOK_URL: want the http(s) URL`},
		{"https://user:pass@app.example.com/hooks", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", `OUTBOUND_WEBHOOK_URL: want the http(s) URL of your backend's endpoint, without credentials`},
	} {
		_, err := with(map[string]string{"OUTBOUND_WEBHOOK_URL": tc.url, "OUTBOUND_WEBHOOK_SECRET": tc.secret})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %q: %v, want %q", tc.url, tc.secret, err, tc.want)
		}
		if err != nil && (tc.secret != "" && strings.Contains(err.Error(), tc.secret) || strings.Contains(err.Error(), "pass")) {
			t.Errorf("the error quotes a secret: %v", err)
		}
	}
}

// TestDevelopmentIdentityService: only development without AUTH_URL (or AUTH_JWKS_URL)
// runs the built-in identity service, at PUBLIC_URL/_dev/auth; serve refuses it unless ADDR
// is a loopback address, naming AUTH_URL.
func TestDevelopmentIdentityService(t *testing.T) {
	secrets := map[string]string{"WEB_WEBHOOK_SECRET": "w", "MOBILE_WEBHOOK_SECRET": "m"}
	cases := []struct {
		name      string
		vars      map[string]string
		dev       bool
		authURL   string
		refusedBy string // the variable ServeProblems names, or ""
	}{
		{"a fresh clone", nil, true, "http://localhost:8080/_dev/auth", ""},
		{"PORT moves it", map[string]string{"PORT": "9090"}, true, "http://localhost:9090/_dev/auth", ""},
		{"PUBLIC_URL places it", map[string]string{"PUBLIC_URL": "http://127.0.0.1:3000/"}, true, "http://127.0.0.1:3000/_dev/auth", ""},
		{"AUTH_URL set", map[string]string{"AUTH_URL": "https://x.supabase.co/auth/v1"}, false, "https://x.supabase.co/auth/v1", ""},
		{"only a JWKS", map[string]string{"AUTH_JWKS_URL": "https://x/jwks"}, false, "", ""},
		{"forms and API off", map[string]string{"FORMS": "off", "API": "off"}, false, "", ""},
		{"test", map[string]string{"APP_ENV": "test"}, false, "", ""},
		{"every interface", map[string]string{"ADDR": ":8080"}, true, "http://localhost:8080/_dev/auth", "AUTH_URL"},
		{"a public address", map[string]string{"ADDR": "192.0.2.7:8080"}, true, "http://localhost:8080/_dev/auth", "AUTH_URL"},
		{"localhost", map[string]string{"ADDR": "localhost:8080"}, true, "http://localhost:8080/_dev/auth", ""},
		{"IPv6 loopback", map[string]string{"ADDR": "[::1]:8080"}, true, "http://localhost:8080/_dev/auth", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{}
			for k, v := range secrets {
				vars[k] = v
			}
			for k, v := range tc.vars {
				vars[k] = v
			}
			c, err := Load(env(vars))
			if err != nil {
				t.Fatal(err)
			}
			if c.DevIdentity != tc.dev || c.AuthURL != tc.authURL {
				t.Fatalf("DevIdentity %v, AUTH_URL %q; want %v, %q", c.DevIdentity, c.AuthURL, tc.dev, tc.authURL)
			}
			if tc.dev && (c.AuthJWKSURL != tc.authURL+"/.well-known/jwks.json" || c.AuthJWTIssuer != tc.authURL) {
				t.Fatalf("JWKS %q, issuer %q", c.AuthJWKSURL, c.AuthJWTIssuer)
			}
			_, err = c.ServeProblems()
			switch {
			case tc.refusedBy == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refusedBy != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.refusedBy+":")):
				t.Fatalf("ServeProblems %v, want it to name %s", err, tc.refusedBy)
			}
		})
	}
}

// TestEveryVariableIsDocumented: each variable Load reads has a row in
// docs/configuration.md, so the reference cannot fall behind the code.
func TestEveryVariableIsDocumented(t *testing.T) {
	var source []byte
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			source = append(source, b...)
		}
	}
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	read := regexp.MustCompile(`(?:get|boolean|duration)\("([A-Z][A-Z0-9_]+)"`).FindAllStringSubmatch(string(source), -1)
	if len(read) < 30 {
		t.Fatalf("found only %d variables read in the package", len(read))
	}
	for _, m := range read {
		if !regexp.MustCompile("(?m)^\\| [^|]*`"+m[1]+"`").Match(doc) && !strings.Contains(string(doc), "`"+m[1]+"`, ") {
			t.Errorf("%s is read by config.Load but has no row in docs/configuration.md", m[1])
		}
	}
}

func TestBatching(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil || c.Batching != (Batching{Size: 32, Wait: time.Millisecond}) {
		t.Fatalf("defaults: %+v %v", c.Batching, err)
	}
	c, err = Load(env(map[string]string{"INGEST_BATCH_SIZE": "1", "INGEST_BATCH_WAIT": "0"}))
	if err != nil || c.Batching != (Batching{Size: 1}) {
		t.Fatalf("one event a transaction: %+v %v", c.Batching, err)
	}
	for name, raw := range map[string]string{"INGEST_BATCH_SIZE": "65", "INGEST_BATCH_WAIT": "1s"} {
		if _, err := Load(env(map[string]string{name: raw})); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v", name, raw, err)
		}
	}
}

func TestReconcileAndOperators(t *testing.T) {
	c, err := Load(env(map[string]string{"RECONCILE_INTERVAL": "6h", "RECONCILE_PACE": "5", "ADMIN_EMAILS": " Ops@Example.com , b@example.com"}))
	if err != nil || c.Reconcile != (Reconcile{Interval: 6 * time.Hour, Pace: 5}) || strings.Join(c.AdminEmails, ",") != "ops@example.com,b@example.com" {
		t.Fatalf("%+v %v %v", c.Reconcile, c.AdminEmails, err)
	}
	c, err = Load(env(map[string]string{"RECONCILE_INTERVAL": "0", "ADMIN_EMAILS": "ops@example.com", "FORMS": "off", "API": "off"}))
	if err != nil || c.Reconcile != (Reconcile{Pace: 20}) || c.AdminEmails != nil {
		t.Fatalf("off: %+v %v %v", c.Reconcile, c.AdminEmails, err)
	}
}

// Any interval of a second or more is accepted; under a minute, serve starts with a
// warning naming RECONCILE_INTERVAL.
func TestReconcileIntervalUnderAMinuteWarns(t *testing.T) {
	secrets := map[string]string{"WEB_WEBHOOK_SECRET": "w", "MOBILE_WEBHOOK_SECRET": "m"}
	for _, tc := range []struct {
		interval string
		warned   bool
	}{{"2s", true}, {"59s", true}, {"1m", false}, {"6h", false}} {
		vars := map[string]string{"RECONCILE_INTERVAL": tc.interval}
		for k, v := range secrets {
			vars[k] = v
		}
		c, err := Load(env(vars))
		if err != nil {
			t.Fatalf("%s: %v", tc.interval, err)
		}
		warnings, err := c.ServeProblems()
		if err != nil {
			t.Fatalf("%s: %v", tc.interval, err)
		}
		warned := strings.Contains(strings.Join(warnings, "\n"), "RECONCILE_INTERVAL="+tc.interval)
		if warned != tc.warned {
			t.Errorf("%s: warned %v (%q), want %v", tc.interval, warned, warnings, tc.warned)
		}
	}
}

// TestAppStoreAPIKeySettings: the App Store's key is all three settings or none, and the
// API is read only with the provider on.
func TestAppStoreAPIKeySettings(t *testing.T) {
	base := map[string]string{"WEB_WEBHOOK_SECRET": "w", "MOBILE_WEBHOOK_SECRET": "m", "APPSTORE_BUNDLE_ID": "com.example.app"}
	with := func(extra map[string]string) (Config, error) {
		m := map[string]string{}
		for _, from := range []map[string]string{base, extra} {
			for k, v := range from {
				m[k] = v
			}
		}
		return Load(env(m))
	}
	key := map[string]string{"APPSTORE_KEY_ID": "ABC123", "APPSTORE_ISSUER_ID": "57246542-96fe-1a63-e053-0824d011072a", "APPSTORE_PRIVATE_KEY_FILE": "AuthKey_ABC123.p8"}
	if c, err := with(key); err != nil || !c.AppStore.APIOn() || c.AppStore.PrivateKeyFile != "AuthKey_ABC123.p8" {
		t.Fatalf("a whole key: %v, %+v", err, c.AppStore)
	}
	if c, err := with(nil); err != nil || c.AppStore.APIOn() {
		t.Fatalf("no key: %v, API on %t", err, c.AppStore.APIOn())
	}
	_, err := with(map[string]string{"APPSTORE_KEY_ID": "ABC123"})
	if err == nil || !strings.Contains(err.Error(), "APPSTORE_ISSUER_ID: is required") || !strings.Contains(err.Error(), "APPSTORE_PRIVATE_KEY_FILE: is required") {
		t.Fatalf("a key id alone: %v", err)
	}
	if _, err := with(map[string]string{"APPSTORE_API_BASE": "localhost:9"}); err == nil || !strings.Contains(err.Error(), "APPSTORE_API_BASE: want an http(s) URL") {
		t.Fatalf("a base without a scheme: %v", err)
	}
}

func TestRetention(t *testing.T) {
	day := 24 * time.Hour
	c, err := Load(env(nil))
	if err != nil || c.Retention != (Retention{}) {
		t.Fatalf("default: %+v %v", c.Retention, err)
	}
	dir := t.TempDir()
	c, err = Load(env(map[string]string{"EVENT_RETENTION": "400d", "ARCHIVE_DIR": dir}))
	if err != nil || c.Retention != (Retention{Window: 400 * day, Unresolved: 800 * day, ArchiveDir: dir}) {
		t.Fatalf("400d: %+v %v", c.Retention, err)
	}
	c, err = Load(env(map[string]string{"EVENT_RETENTION": "180d", "EVENT_RETENTION_UNRESOLVED": "365d"}))
	if err != nil || c.Retention != (Retention{Window: 180 * day, Unresolved: 365 * day}) {
		t.Fatalf("180d and 365d: %+v %v", c.Retention, err)
	}
	for _, tc := range []struct {
		vars map[string]string
		name string
	}{
		{map[string]string{"EVENT_RETENTION": "90d"}, "EVENT_RETENTION"},
		{map[string]string{"EVENT_RETENTION": "4000h"}, "EVENT_RETENTION"}, // 166 days
		{map[string]string{"EVENT_RETENTION": "a year"}, "EVENT_RETENTION"},
		{map[string]string{"EVENT_RETENTION": "400d", "EVENT_RETENTION_UNRESOLVED": "200d"}, "EVENT_RETENTION_UNRESOLVED"},
		{map[string]string{"EVENT_RETENTION_UNRESOLVED": "400d"}, "EVENT_RETENTION_UNRESOLVED"},
		{map[string]string{"EVENT_RETENTION": "400d", "ARCHIVE_DIR": filepath.Join(dir, "missing")}, "ARCHIVE_DIR"},
	} {
		if _, err := Load(env(tc.vars)); err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%v: %v, want a refusal naming %s", tc.vars, err, tc.name)
		}
	}
}

// The retention bound config refuses under is billing's, which the pipeline prunes by.
func TestMinRetentionIsBillings(t *testing.T) {
	if MinRetention != billing.MinRetention {
		t.Fatalf("config.MinRetention %v, billing.MinRetention %v", MinRetention, billing.MinRetention)
	}
}

func TestHeldAnswers(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil || c.HeldAnswers.TTL != 15*time.Minute || c.HeldAnswers.Audience != "tollgate" || c.HeldAnswers.HookSecrets != nil {
		t.Fatalf("default: %+v %v", c.HeldAnswers, err)
	}
	// As Supabase shows them: v1,whsec_ and base64; two during a rotation, separated by |.
	c, err = Load(env(map[string]string{"ENTITLEMENT_TOKEN_TTL": "10s", "ENTITLEMENT_TOKEN_AUDIENCE": "my-backend",
		"AUTH_HOOK_SECRET": "v1,whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY= | whsec_ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA="}))
	if err != nil || c.HeldAnswers.TTL != 10*time.Second || c.HeldAnswers.Audience != "my-backend" || len(c.HeldAnswers.HookSecrets) != 2 ||
		string(c.HeldAnswers.HookSecrets[0]) != "0123456789abcdef0123456789abcdef" {
		t.Fatalf("set: %+v %v", c.HeldAnswers, err)
	}
	for _, tc := range []struct {
		vars map[string]string
		name string
	}{
		{map[string]string{"ENTITLEMENT_TOKEN_TTL": "5s"}, "ENTITLEMENT_TOKEN_TTL"},
		{map[string]string{"ENTITLEMENT_TOKEN_TTL": "25h"}, "ENTITLEMENT_TOKEN_TTL"},
		{map[string]string{"ENTITLEMENT_TOKEN_TTL": "a while"}, "ENTITLEMENT_TOKEN_TTL"},
		{map[string]string{"AUTH_HOOK_SECRET": "my-secret"}, "AUTH_HOOK_SECRET"},
		{map[string]string{"AUTH_HOOK_SECRET": "v1,whsec_not base64!"}, "AUTH_HOOK_SECRET"},
		{map[string]string{"AUTH_HOOK_SECRET": "v1,whsec_c2hvcnQ="}, "AUTH_HOOK_SECRET"}, // 5 bytes
	} {
		_, err := Load(env(tc.vars))
		if err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%v: %v, want a refusal naming %s", tc.vars, err, tc.name)
		}
		if secret := tc.vars["AUTH_HOOK_SECRET"]; err != nil && secret != "" && strings.Contains(err.Error(), secret) {
			t.Errorf("the refusal repeats the secret: %v", err)
		}
	}
}
