package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A first run explains itself: where to click, which database, and one warning for each
// thing the server will not be able to do.
func TestServeStartUpLines(t *testing.T) {
	unpriced := filepath.Join(t.TempDir(), "plans.yml")
	os.WriteFile(unpriced, []byte("plans:\n  free: {default: true}\n  pro: {name: Pro}\n  team: {web_prices: [price_team]}\n"), 0o600)
	for _, tc := range []struct {
		name         string
		env          map[string]string
		want, absent []string
	}{
		{"development without an identity service or plans file", map[string]string{"APP_ENV": "development", "PLANS_FILE": "no/such/plans.yml"}, []string{
			`msg="tollgate is running" url=http://127.0.0.1:`, "database=\"sqlite ", "web_ingestion=webhook",
			"level=WARN msg=\"no " + DevEnvFile + " at ", "level=WARN msg=\"development identity service on http://127.0.0.1:",
			"level=WARN msg=\"no plans file at PLANS_FILE=no/such/plans.yml",
			`providers="web,mobile,playstore (development stand-in)" console=off reconcile=off outbound_webhooks=off access_token_hook=off`,
			"level=WARN msg=\"Google Play through the development stand-in on ",
		}, []string{"plans without prices", "no AUTH_URL"}},
		{"production billing only, with reconciliation and outbound webhooks", billingOnlyProduction(map[string]string{
			"LOG_FORMAT": "text", "WEB_API_KEY": "sk_test_unused", "WEB_API_BASE": "http://127.0.0.1:1", "RECONCILE_INTERVAL": "6h", "OUTBOUND_WEBHOOK_URL": "https://backend.example.test/hook",
			"OUTBOUND_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "APPSTORE_BUNDLE_ID": "com.example.app",
			"AUTH_HOOK_SECRET": "v1,whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		}), []string{`providers=web,mobile,appstore console=off reconcile="web every 6h0m0s" outbound_webhooks=on access_token_hook=on`}, []string{"development stand-in", "whsec_MDEy"}},
		{"test without an identity service", nil, []string{"level=WARN msg=\"no AUTH_URL: the sign-in forms and /api/v1 cannot work"},
			[]string{"development identity service"}},
		{"a plan no price reaches", map[string]string{"PLANS_FILE": unpriced, "AUTH_URL": "http://127.0.0.1:1"}, []string{
			"level=WARN msg=\"plans without prices (no web_prices or mobile_products): pro: no purchase can reach them\"",
		}, []string{"no AUTH_URL", "no plans file", DevEnvFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := startServe(t, testEnv(t, tc.env))
			code, logs := stop()
			if code != 0 {
				t.Fatalf("serve exited %d:\n%s", code, logs)
			}
			for _, want := range tc.want {
				if !strings.Contains(logs, want) {
					t.Errorf("start-up lacks %q:\n%s", want, logs)
				}
			}
			for _, absent := range tc.absent {
				if strings.Contains(logs, absent) {
					t.Errorf("start-up says %q:\n%s", absent, logs)
				}
			}
			if n := strings.Count(logs, "tollgate is running"); n != 1 {
				t.Errorf("the running line appears %d times", n)
			}
		})
	}
}

// TestProductionRefusesABrokenPlansFile: in production serve stops on a plans file it
// cannot use, naming the variable, the file, the line and the plan; nothing is served.
func TestProductionRefusesABrokenPlansFile(t *testing.T) {
	broken := filepath.Join(t.TempDir(), "plans.yml")
	os.WriteFile(broken, []byte("plans:\n  free: {default: true}\n  pro:\n    web_prices: price_pro\n"), 0o600)
	for _, tc := range []struct{ file, want string }{
		{broken, "PLANS_FILE: plans file " + broken + ": line 4: plan \"pro\""},
		{"no/such/plans.yml", "PLANS_FILE: plans file: open no/such/plans.yml: no such file"},
	} {
		env := testEnv(t, billingOnlyProduction(map[string]string{"PLANS_FILE": tc.file}))
		code, _, errOut := runCmd(context.Background(), env, "serve")
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("production with plans file %s: exit %d %q, want %q", tc.file, code, errOut, tc.want)
		}
	}
}
