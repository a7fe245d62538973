package ratelimit

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	tests := []struct{ peer, xff, want string }{
		{"203.0.113.7:1234", "", "203.0.113.7"},
		{"203.0.113.7:1234", "198.51.100.1", "203.0.113.7"},                  // untrusted peer: header ignored
		{"10.0.0.2:1234", "198.51.100.1", "198.51.100.1"},                    // trusted proxy
		{"10.0.0.2:1234", "6.6.6.6, 198.51.100.1, 10.0.0.3", "198.51.100.1"}, // right-most untrusted
		{"10.0.0.2:1234", "garbage", "10.0.0.2"},
		{"[::ffff:203.0.113.7]:1", "", "203.0.113.7"},
	}
	for _, tc := range tests {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = tc.peer
		if tc.xff != "" {
			req.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := ClientIP(req, trusted).String(); got != tc.want {
			t.Errorf("peer %s, XFF %q: %s, want %s", tc.peer, tc.xff, got, tc.want)
		}
	}
}
