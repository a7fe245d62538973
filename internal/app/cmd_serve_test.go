package app

import (
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
			"level=WARN msg=\"no " + DevEnvFile + " at ", "level=WARN msg=\"no AUTH_URL: the sign-in forms and /api/v1 cannot work",
			"level=WARN msg=\"no plans file at PLANS_FILE=no/such/plans.yml",
		}, []string{"plans without prices"}},
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
