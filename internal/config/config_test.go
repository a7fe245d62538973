package config

import (
	"strings"
	"testing"
	"time"
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
		"Addr":            {c.Addr, ":8080"},
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
		"ShutdownTimeout": {c.ShutdownTimeout, 25 * time.Second},
		"MetricsAddr":     {c.MetricsAddr, ""},
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
		"APP_ENV":          "staging",
		"DATABASE_URL":     "mysql://user:hunter2@db/x",
		"WEB_INGESTION":    "polling",
		"WEBHOOK_MAX_BODY": "lots",
		"TRUSTED_PROXIES":  "10.0.0.0/8,not-an-ip",
		"BILLING_MOUNT":    "a/b",
		"DB_TIMEOUT":       "soon",
		"SHUTDOWN_TIMEOUT": "-1s",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, name := range []string{"APP_ENV", "DATABASE_URL", "WEB_INGESTION", "WEBHOOK_MAX_BODY", "TRUSTED_PROXIES", "BILLING_MOUNT", "WEB_WEBHOOK_SECRET", "MOBILE_WEBHOOK_SECRET", "DB_TIMEOUT", "SHUTDOWN_TIMEOUT"} {
		if !strings.Contains(msg, name) {
			t.Errorf("error does not name %s:\n%s", name, msg)
		}
	}
	if strings.Contains(msg, "hunter2") {
		t.Error("a password reached the error message")
	}
}

func TestSecretsBySyncEngineMode(t *testing.T) {
	_, err := Load(env(map[string]string{"WEB_INGESTION": "sync_engine", "MOBILE_WEBHOOK_SECRET": "m"}))
	if err != nil {
		t.Fatalf("sync_engine without a web secret: %v", err)
	}
	_, err = Load(env(map[string]string{"WEB_INGESTION": "sync_engine", "WEB_WEBHOOK_SECRET": "w"}))
	if err == nil || !strings.Contains(err.Error(), "MOBILE_WEBHOOK_SECRET") {
		t.Fatalf("missing mobile secret: %v", err)
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
