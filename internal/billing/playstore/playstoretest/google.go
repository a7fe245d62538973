// Package playstoretest is a local stand-in for the parts of Google that Google Play's
// notifications involve: the keys of Pub/Sub push tokens, the OAuth token endpoint a
// service account signs in at, and the Google Play Developer API's subscriptionsv2.get and
// acknowledge. Tests point PLAY_PUSH_JWKS_URL, the key file's token_uri and PLAY_API_BASE
// at it.
package playstoretest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/api/androidpublisher/v3"
)

const accessToken = "fake-google-access-token"

// Google is the stand-in, serving at URL.
type Google struct {
	URL       string
	pushKey   *rsa.PrivateKey
	accessKey *rsa.PrivateKey // the service account's
	mu        sync.Mutex
	purchases map[string]*androidpublisher.SubscriptionPurchaseV2
	products  map[string]*androidpublisher.ProductPurchase
	acks      map[string]int
	down      bool
	// keysHeld, while not nil, holds every request for the push keys until it is closed;
	// keyRequests counts those requests.
	keysHeld    chan struct{}
	keyRequests int
	keysDown    bool
}

// Start serves a stand-in until the test ends.
func Start(t testing.TB) *Google {
	t.Helper()
	g := &Google{purchases: map[string]*androidpublisher.SubscriptionPurchaseV2{}, products: map[string]*androidpublisher.ProductPurchase{}, acks: map[string]int{}}
	var err error
	if g.pushKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if g.accessKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /certs", g.certs)
	mux.HandleFunc("POST /token", g.token)
	mux.HandleFunc("GET /androidpublisher/v3/applications/{pkg}/purchases/subscriptionsv2/tokens/{token}", g.subscription)
	mux.HandleFunc("POST /androidpublisher/v3/applications/{pkg}/purchases/subscriptions/{sub}/tokens/{action}", g.acknowledge)
	mux.HandleFunc("GET /androidpublisher/v3/applications/{pkg}/purchases/products/{sku}/tokens/{token}", g.product)
	mux.HandleFunc("POST /androidpublisher/v3/applications/{pkg}/purchases/products/{sku}/tokens/{action}", g.acknowledge)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

// JWKSURL serves the push tokens' keys.
func (g *Google) JWKSURL() string { return g.URL + "/certs" }

// ServiceAccountJSON is a service account key whose token_uri is the stand-in's.
func (g *Google) ServiceAccountJSON() []byte {
	der, _ := x509.MarshalPKCS8PrivateKey(g.accessKey)
	key, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "tollgate-test", "private_key_id": "sa-key-1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "reader@tollgate-test.iam.gserviceaccount.com", "client_id": "1", "token_uri": g.URL + "/token",
	})
	return key
}

// PushToken is an OIDC token as Pub/Sub signs it, with claims (iss, aud, email, …);
// signedBy, when not nil, signs it instead of Google's push key.
func (g *Google) PushToken(claims jwt.MapClaims, signedBy *rsa.PrivateKey) string {
	key := g.pushKey
	if signedBy != nil {
		key = signedBy
	}
	token := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	token.Header["kid"] = "push-key-1"
	signed, _ := token.SignedString(key)
	return signed
}

// SetPurchase makes Google know token's subscription purchase as p.
func (g *Google) SetPurchase(token string, p *androidpublisher.SubscriptionPurchaseV2) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.purchases[token] = p
}

// SetProduct makes Google know token's one-time product purchase as p.
func (g *Google) SetProduct(token string, p *androidpublisher.ProductPurchase) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.products[token] = p
}

// SetDown makes the API answer 503 (true) or serve again.
func (g *Google) SetDown(down bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.down = down
}

// Acks is how many times token's purchase was acknowledged.
func (g *Google) Acks(token string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.acks[token]
}

// HoldKeys makes the push keys' endpoint hang (true), as an outage that answers nothing
// does, until released (false) or the request gives up.
func (g *Google) HoldKeys(hold bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case hold && g.keysHeld == nil:
		g.keysHeld = make(chan struct{})
	case !hold && g.keysHeld != nil:
		close(g.keysHeld)
		g.keysHeld = nil
	}
}

// SetKeysDown makes the push keys' endpoint answer 503 (true) or serve again.
func (g *Google) SetKeysDown(down bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.keysDown = down
}

// KeyRequests is how many times the push keys were asked for.
func (g *Google) KeyRequests() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.keyRequests
}

func (g *Google) certs(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.keyRequests++
	held, down := g.keysHeld, g.keysDown
	g.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-r.Context().Done():
			return
		}
	}
	if down {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	pub := g.pushKey.PublicKey
	json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": "push-key-1",
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}}})
}

// token grants an access token for an assertion the service account's key signed.
func (g *Google) token(w http.ResponseWriter, r *http.Request) {
	assertion := r.PostFormValue("assertion")
	_, err := jwt.Parse(assertion, func(*jwt.Token) (any, error) { return &g.accessKey.PublicKey, nil }, jwt.WithValidMethods([]string{"RS256"}))
	if r.PostFormValue("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || err != nil {
		http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": accessToken, "token_type": "Bearer", "expires_in": 3600})
}

// authorized answers 401 or 503 as Google would, and says whether to go on.
func (g *Google) authorized(w http.ResponseWriter, r *http.Request) bool {
	g.mu.Lock()
	down := g.down
	g.mu.Unlock()
	switch {
	case r.Header.Get("Authorization") != "Bearer "+accessToken:
		apiError(w, http.StatusUnauthorized, "unauthenticated")
	case down:
		apiError(w, http.StatusServiceUnavailable, "backendError")
	default:
		return true
	}
	return false
}

func (g *Google) subscription(w http.ResponseWriter, r *http.Request) {
	if !g.authorized(w, r) {
		return
	}
	g.mu.Lock()
	p, ok := g.purchases[r.PathValue("token")]
	g.mu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "purchaseTokenNotFound")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(p)
}

// acknowledge marks a subscription's or a one-time product's purchase acknowledged.
func (g *Google) acknowledge(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutSuffix(r.PathValue("action"), ":acknowledge")
	if !ok || !g.authorized(w, r) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if p, known := g.purchases[token]; known && strings.Contains(r.URL.Path, "/purchases/subscriptions/") {
		p.AcknowledgementState = "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
	} else if p, known := g.products[token]; known && strings.Contains(r.URL.Path, "/purchases/products/") {
		p.AcknowledgementState = 1
	} else {
		apiError(w, http.StatusNotFound, "purchaseTokenNotFound")
		return
	}
	g.acks[token]++
	w.WriteHeader(http.StatusNoContent)
}

func (g *Google) product(w http.ResponseWriter, r *http.Request) {
	if !g.authorized(w, r) {
		return
	}
	g.mu.Lock()
	p, ok := g.products[r.PathValue("token")]
	g.mu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "purchaseTokenNotFound")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(p)
}

func apiError(w http.ResponseWriter, code int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": code, "message": reason, "errors": []map[string]string{{"reason": reason, "message": reason}},
	}})
}

// Push is the body Pub/Sub posts for notification (a DeveloperNotification).
func Push(messageID string, notification any) []byte {
	data, _ := json.Marshal(notification)
	body, _ := json.Marshal(map[string]any{
		"message": map[string]any{"data": base64.StdEncoding.EncodeToString(data), "messageId": messageID,
			"publishTime": time.Now().UTC().Format(time.RFC3339Nano)},
		"subscription": "projects/tollgate-test/subscriptions/play",
	})
	return body
}
