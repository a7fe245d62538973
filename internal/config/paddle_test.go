package config

import (
	"strings"
	"testing"
)

// Paddle's settings: its secrets a comma list; its API's base the one its key's prefix
// names, or PADDLE_API_BASE, required for a key that names none; in development without a
// key, the stand-in's.
func TestPaddleSettings(t *testing.T) {
	load := func(vars map[string]string) (Config, error) {
		m := map[string]string{"WEB_WEBHOOK_SECRET": "w", "MOBILE_WEBHOOK_SECRET": "m"}
		for k, v := range vars {
			m[k] = v
		}
		return Load(env(m))
	}
	if c, err := load(nil); err != nil || c.Paddle.On() {
		t.Fatalf("no secret: on %t, %v", c.Paddle.On(), err)
	}
	for key, want := range map[string]string{"pdl_sdbx_apikey_01abc": PaddleSandboxAPI, "pdl_live_apikey_01abc": PaddleLiveAPI} {
		c, err := load(map[string]string{"PADDLE_WEBHOOK_SECRET": "pdl_ntfset_a, pdl_ntfset_b", "PADDLE_API_KEY": key})
		if err != nil || c.Paddle.APIBase != want || len(c.Paddle.WebhookSecrets) != 2 || c.Paddle.WebhookSecrets[1] != "pdl_ntfset_b" {
			t.Errorf("%s: %q %q %v", key, c.Paddle.APIBase, c.Paddle.WebhookSecrets, err)
		}
	}
	if _, err := load(map[string]string{"PADDLE_WEBHOOK_SECRET": "s", "PADDLE_API_KEY": "0123456789abcdef0123456789abcdef0123456789abcdef01"}); err == nil ||
		!strings.Contains(err.Error(), "PADDLE_API_BASE: is required with a PADDLE_API_KEY whose prefix says neither") {
		t.Errorf("an older key without a base: %v", err)
	}
	if c, err := load(map[string]string{"PADDLE_API_KEY": "0123456789abcdef", "PADDLE_API_BASE": "https://sandbox-api.paddle.com/"}); err != nil || c.Paddle.APIBase != PaddleSandboxAPI {
		t.Errorf("an older key with its base: %q %v", c.Paddle.APIBase, err)
	}
	if _, err := load(map[string]string{"PADDLE_API_BASE": "ftp://x"}); err == nil || !strings.Contains(err.Error(), "PADDLE_API_BASE: want") {
		t.Errorf("a base that is no URL: %v", err)
	}
	c, err := load(map[string]string{"APP_ENV": "development", "ADDR": "127.0.0.1:8080", "PADDLE_WEBHOOK_SECRET": "s"})
	if err != nil || !c.Paddle.Dev || c.Paddle.APIBase != c.PublicURL+DevPaddlePath || c.Paddle.APIKey == "" {
		t.Errorf("development without a key: %+v %v", c.Paddle, err)
	}
}
