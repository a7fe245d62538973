// Package playstoretest serves Google's stand-in (playdev) for a test: tests point
// PLAY_PUSH_JWKS_URL, the key file's token_uri and PLAY_API_BASE at it.
package playstoretest

import (
	"net/http/httptest"
	"testing"

	"github.com/tollgate/tollgate/internal/billing/playstore/playdev"
)

// Google is the stand-in, serving at URL behind Google's faults (faults.go) until the test
// ends.
type Google struct {
	*playdev.Google
	URL    string
	faults faults
}

// Start serves a stand-in until the test ends. Its push tokens name no particular
// audience: tests mint their own with PushToken.
func Start(t testing.TB) *Google {
	t.Helper()
	g, err := playdev.New(playdev.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := &Google{Google: g, faults: faults{failNext: map[string][]Failure{}}}
	srv := httptest.NewServer(s.behindFaults(g.Handler()))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// JWKSURL serves the push tokens' keys.
func (g *Google) JWKSURL() string { return g.URL + "/certs" }

// ServiceAccountJSON is a service account key whose token_uri is the stand-in's.
func (g *Google) ServiceAccountJSON() []byte {
	key, err := playdev.ServiceAccountJSON(g.URL)
	if err != nil {
		panic(err) // only rand.Reader failing
	}
	return key
}

// Push is the body Pub/Sub posts for notification (a DeveloperNotification).
func Push(messageID string, notification any) []byte { return playdev.Push(messageID, notification) }
