// Package playdev stands in for the parts of Google that Google Play's notifications
// involve, so that Google Play can be tried with no Google account: the keys of Pub/Sub
// push tokens, the OAuth token endpoint a service account signs in at, and the Google Play
// Developer API's subscriptionsv2.get, products.get, acknowledge and voidedpurchases.list. A local caller fills
// it with a purchase (POST /purchases) and gets back the push token Pub/Sub would send.
//
// tollgate serves it in development only, on a loopback address, under /_dev/play; the
// tests serve it too (playstoretest). It knows only what it was told, and forgets it when
// the process ends.
package playdev

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/api/androidpublisher/v3"
)

// accessToken is the one access token the stand-in grants and accepts.
const accessToken = "playdev-access-token"

// Config names what the push tokens the stand-in mints carry, as a Pub/Sub push
// subscription's do: the audience (the webhook's URL) and the signing service account.
type Config struct {
	Audience, ServiceAccount string
	// Saved is what an earlier stand-in was told (as Save was given it), to start from.
	Saved []byte
	// Save, when set, is given what the stand-in was told after every change: purchases,
	// voids and acknowledgements. It runs while the stand-in is locked, so it must not
	// call back into it.
	Save func(state []byte)
}

// Google is the stand-in. Its handler serves at a base URL the caller chooses.
type Google struct {
	cfg     Config
	pushKey *rsa.PrivateKey

	mu        sync.Mutex
	purchases map[string]*androidpublisher.SubscriptionPurchaseV2
	products  map[string]*androidpublisher.ProductPurchase
	acks      map[string]int
	ackedAs   map[string]string // the subscription id each token's last acknowledgement named
	// voided are the voided purchases listed.
	voided []*androidpublisher.VoidedPurchase
	// reads are when each purchase was read (subscriptionsv2.get, products.get).
	reads []time.Time
	// Clock is the stand-in's now, which the voided list's window is measured from
	// (default time.Now).
	Clock func() time.Time
}

// New makes a stand-in with a fresh push key, knowing what cfg.Saved holds.
func New(cfg Config) (*Google, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	g := &Google{cfg: cfg, pushKey: key, purchases: map[string]*androidpublisher.SubscriptionPurchaseV2{},
		products: map[string]*androidpublisher.ProductPurchase{}, acks: map[string]int{}, ackedAs: map[string]string{}, Clock: time.Now}
	if err := g.restore(cfg.Saved); err != nil {
		return nil, fmt.Errorf("the Google Play stand-in's saved state: %w", err)
	}
	return g, nil
}

// Handler serves the stand-in's routes, relative to its base URL.
func (g *Google) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /certs", g.certs)
	mux.HandleFunc("POST /token", g.token)
	mux.HandleFunc("POST /purchases", g.addPurchase)
	mux.HandleFunc("GET /androidpublisher/v3/applications/{pkg}/purchases/subscriptionsv2/tokens/{token}", g.subscription)
	mux.HandleFunc("POST /androidpublisher/v3/applications/{pkg}/purchases/subscriptions/{sub}/tokens/{action}", g.acknowledge)
	mux.HandleFunc("GET /androidpublisher/v3/applications/{pkg}/purchases/products/{sku}/tokens/{token}", g.product)
	mux.HandleFunc("POST /androidpublisher/v3/applications/{pkg}/purchases/products/{sku}/tokens/{action}", g.acknowledge)
	mux.HandleFunc("GET /androidpublisher/v3/applications/{pkg}/purchases/voidedpurchases", g.voidedPurchases)
	return mux
}

// ServiceAccountJSON is a new service account key whose token_uri is the stand-in's at
// base. The stand-in grants any assertion from it: it stands in for Google, not for a
// particular account. So the key guards nothing, and is the smallest Go makes (1024 bits,
// a few milliseconds): every command in development that wires billing makes one.
func ServiceAccountJSON(base string) ([]byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]string{
		"type": "service_account", "project_id": "tollgate-dev", "private_key_id": "playdev-1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "reader@tollgate-dev.iam.gserviceaccount.com", "client_id": "1", "token_uri": strings.TrimRight(base, "/") + "/token",
	})
}

// PushToken is an OIDC token as Pub/Sub signs it, with claims (iss, aud, email, …);
// signedBy, when not nil, signs it instead of the stand-in's push key (forgery tests).
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

// pushClaims are the claims of a push token minted now for the configured subscription.
func (g *Google) pushClaims(now time.Time) jwt.MapClaims {
	return jwt.MapClaims{"iss": "https://accounts.google.com", "aud": g.cfg.Audience, "email": g.cfg.ServiceAccount,
		"email_verified": true, "sub": "playdev", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

// SetPurchase makes Google know token's subscription purchase as p.
func (g *Google) SetPurchase(token string, p *androidpublisher.SubscriptionPurchaseV2) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.purchases[token] = p
	g.changed()
}

// SetProduct makes Google know token's one-time product purchase as p.
func (g *Google) SetProduct(token string, p *androidpublisher.ProductPurchase) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.products[token] = p
	g.changed()
}

// Reads are when each purchase was read, in order.
func (g *Google) Reads() []time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.reads)
}

// Acks is how many times token's purchase was acknowledged.
func (g *Google) Acks(token string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.acks[token]
}

// AckedAs is the subscription id the last acknowledgement of token's subscription named.
func (g *Google) AckedAs(token string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ackedAs[token]
}

// Purchase is what POST /purchases takes: a purchase token and the subscription purchase
// (or one-time product purchase) Google is to report for it.
type Purchase struct {
	PurchaseToken        string                                   `json:"purchaseToken"`
	SubscriptionPurchase *androidpublisher.SubscriptionPurchaseV2 `json:"subscriptionPurchase,omitempty"`
	ProductPurchase      *androidpublisher.ProductPurchase        `json:"productPurchase,omitempty"`
}

// PurchaseAdded is what POST /purchases answers: the push token to send the
// notification with.
type PurchaseAdded struct {
	PushToken string `json:"pushToken"`
}

// addPurchase records a purchase and answers with a push token for its notification.
func (g *Google) addPurchase(w http.ResponseWriter, r *http.Request) {
	var p Purchase
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&p); err != nil || p.PurchaseToken == "" ||
		(p.SubscriptionPurchase == nil) == (p.ProductPurchase == nil) {
		apiError(w, http.StatusBadRequest, "want {purchaseToken, subscriptionPurchase or productPurchase}")
		return
	}
	if p.SubscriptionPurchase != nil {
		g.SetPurchase(p.PurchaseToken, p.SubscriptionPurchase)
	} else {
		g.SetProduct(p.PurchaseToken, p.ProductPurchase)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(PurchaseAdded{PushToken: g.PushToken(g.pushClaims(time.Now()), nil)})
}

func (g *Google) certs(w http.ResponseWriter, _ *http.Request) {
	pub := g.pushKey.PublicKey
	json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": "push-key-1",
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}}})
}

// token grants an access token for a service account's signed assertion.
func (g *Google) token(w http.ResponseWriter, r *http.Request) {
	assertion := r.PostFormValue("assertion")
	_, _, err := jwt.NewParser().ParseUnverified(assertion, jwt.MapClaims{})
	if r.PostFormValue("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || err != nil {
		http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": accessToken, "token_type": "Bearer", "expires_in": 3600})
}

// authorized answers 401 as Google would without the access token, and says whether to
// go on.
func (g *Google) authorized(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Authorization") != "Bearer "+accessToken {
		apiError(w, http.StatusUnauthorized, "unauthenticated")
		return false
	}
	return true
}

func (g *Google) subscription(w http.ResponseWriter, r *http.Request) {
	serveKnown(g, w, r, g.purchases)
}

func (g *Google) product(w http.ResponseWriter, r *http.Request) {
	serveKnown(g, w, r, g.products)
}

// serveKnown answers with the purchase known for the path's token, as Google does.
func serveKnown[T any](g *Google, w http.ResponseWriter, r *http.Request, known map[string]*T) {
	if !g.authorized(w, r) {
		return
	}
	g.mu.Lock()
	g.reads = append(g.reads, time.Now())
	p, ok := known[r.PathValue("token")]
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
		g.ackedAs[token] = r.PathValue("sub")
	} else if p, known := g.products[token]; known && strings.Contains(r.URL.Path, "/purchases/products/") {
		p.AcknowledgementState = 1
	} else {
		apiError(w, http.StatusNotFound, "purchaseTokenNotFound")
		return
	}
	g.acks[token]++
	g.changed()
	w.WriteHeader(http.StatusNoContent)
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
		"subscription": "projects/tollgate-dev/subscriptions/play",
	})
	return body
}
