package appstore_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/appstore"
	"github.com/tollgate/tollgate/internal/billing/appstore/appstoredev"
)

const bundle = "com.example.app"

var signed = time.Now().Add(-time.Minute).Truncate(time.Millisecond)

func chain(t *testing.T, opts appstoredev.Options) *appstoredev.Chain {
	t.Helper()
	c, err := appstoredev.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func adapter(t *testing.T, roots []byte) *appstore.Adapter {
	t.Helper()
	a, err := appstore.New(appstore.Config{BundleID: bundle, RootCerts: roots, Environments: []string{"Production"}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func subscribed() appstoredev.Notification {
	return appstoredev.Notification{
		UUID: "2f6f3ac0-1f3c-4d4e-9d1c-7a8b9c0d1e2f", Type: "SUBSCRIBED", Subtype: "INITIAL_BUY", BundleID: bundle, Signed: signed,
		Transaction: &appstoredev.Transaction{
			OriginalTransactionID: "2000000111", TransactionID: "2000000111", BundleID: bundle, ProductID: "com.example.app.pro.monthly",
			AppAccountToken: "5A4C8162-3B1E-4F7A-9D2C-8E6F0A1B2C3D", Expires: signed.Add(30 * 24 * time.Hour), Price: 9990, Currency: "USD",
		},
	}
}

func body(t *testing.T, c *appstoredev.Chain, n appstoredev.Notification) []byte {
	t.Helper()
	b, err := c.Body(n)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A notification signed by a chain to the pinned root verifies, and reads into the facts
// of its subscription.
func TestAVerifiedNotificationReadsIntoFacts(t *testing.T) {
	c := chain(t, appstoredev.Options{})
	a := adapter(t, c.RootPEM())
	raw := body(t, c, subscribed())
	if err := a.Verify(nil, raw, time.Now()); err != nil {
		t.Fatal(err)
	}
	ev, err := a.Parse(raw)
	if err != nil || ev.ID != "2f6f3ac0-1f3c-4d4e-9d1c-7a8b9c0d1e2f" || ev.Type != "SUBSCRIBED" || ev.Answer != nil {
		t.Fatalf("parse: %+v %v", ev, err)
	}
	for _, e := range []billing.Event{ev, {ID: ev.ID, Type: ev.Type}} { // as received, and as replayed
		r, err := a.Read(e, raw)
		if err != nil || r.Subscription != "2000000111" || !r.At.Equal(signed) {
			t.Fatalf("read: %+v %v", r, err)
		}
		state, decoded, err := a.Apply(r, billing.Stored{})
		if err != nil {
			t.Fatal(err)
		}
		for _, stored := range []billing.Stored{{State: string(state), Decoded: decoded}, {State: string(state)}} {
			f, err := a.Facts(stored)
			if err != nil || f.UserID != "5a4c8162-3b1e-4f7a-9d2c-8e6f0a1b2c3d" || f.Status != billing.StatusActive ||
				!f.PeriodEnd.Equal(signed.Add(30*24*time.Hour)) || f.Products[0] != "com.example.app.pro.monthly" ||
				f.PriceList != billing.ProviderMobile || f.Amount != 999 || f.Currency != "usd" {
				t.Fatalf("facts %+v (%v)", f, err)
			}
		}
	}
}

// Apple's root is pinned by default: a chain of ours does not verify against it.
func TestAppleRootIsPinnedByDefault(t *testing.T) {
	c := chain(t, appstoredev.Options{})
	if err := adapter(t, nil).Verify(nil, body(t, c, subscribed()), time.Now()); err == nil {
		t.Fatal("a test chain verified against Apple's root")
	}
}

// tamper replaces the payload of the signed transaction inside a signed payload's claims,
// keeping its signature.
func tamperTransaction(t *testing.T, c *appstoredev.Chain, n appstoredev.Notification) []byte {
	t.Helper()
	other := *n.Transaction
	other.AppAccountToken = "00000000-0000-4000-8000-000000000666"
	forged, err := c.SignTransaction(other, n.Signed, "Production")
	if err != nil {
		t.Fatal(err)
	}
	genuine, err := c.SignTransaction(*n.Transaction, n.Signed, "Production")
	if err != nil {
		t.Fatal(err)
	}
	g, f := strings.Split(genuine, "."), strings.Split(forged, ".")
	spliced := g[0] + "." + f[1] + "." + g[2]
	payload := map[string]any{"notificationType": n.Type, "notificationUUID": n.UUID, "signedDate": n.Signed.UnixMilli(),
		"data": map[string]any{"bundleId": bundle, "environment": "Production", "signedTransactionInfo": spliced}}
	signedPayload, err := c.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]string{"signedPayload": signedPayload})
	return raw
}

// Every forgery is refused before anything is stored.
func TestForgeriesAreRefused(t *testing.T) {
	good := chain(t, appstoredev.Options{})
	a := adapter(t, good.RootPEM())
	otherKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	selfSigned := chain(t, appstoredev.Options{})
	selfSigned.Intermediate, selfSigned.Root = good.Intermediate, good.Root // the leaf is no one's but its own
	forTheirApp := subscribed()
	forTheirApp.BundleID = "com.example.other"
	theirTransaction := subscribed()
	theirTransaction.Transaction.BundleID = "com.example.other"
	genuine, err := good.SignedPayload(subscribed())
	if err != nil {
		t.Fatal(err)
	}
	anotherKeyBody, _ := json.Marshal(map[string]string{"signedPayload": resign(t, genuine, otherKey)})
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"a chain to another root", body(t, chain(t, appstoredev.Options{}), subscribed())},
		{"a leaf not issued by the intermediate", body(t, selfSigned, subscribed())},
		{"a leaf without Apple's marker", body(t, rootedAt(t, good, appstoredev.Options{NoLeafMarker: true}), subscribed())},
		{"an intermediate without Apple's marker", body(t, rootedAt(t, good, appstoredev.Options{NoIntermediateMarker: true}), subscribed())},
		{"a leaf expired when it signed", body(t, rootedAt(t, good, appstoredev.Options{LeafNotAfter: signed.Add(-time.Hour)}), subscribed())},
		{"a payload signed by a key the leaf does not hold", anotherKeyBody},
		{"a tampered nested transaction", tamperTransaction(t, good, subscribed())},
		{"another app's notification", body(t, good, forTheirApp)},
		{"another app's transaction", body(t, good, theirTransaction)},
		{"no x5c at all", []byte(`{"signedPayload":"` + unsigned(t) + `"}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := a.Verify(nil, tc.body, time.Now())
			var bodyErr *billing.BodyError
			if err == nil || errors.As(err, &bodyErr) {
				t.Fatalf("verify = %v, want a refusal", err)
			}
		})
	}
	if err := a.Verify(nil, []byte(`{"signed": "x"}`), time.Now()); !errors.As(err, new(*billing.BodyError)) {
		t.Fatalf("a body without signedPayload: %v, want a body error (400)", err)
	}
}

// rootedAt is a chain under good's root, bent by opts: only the part opts names is wrong.
func rootedAt(t *testing.T, good *appstoredev.Chain, opts appstoredev.Options) *appstoredev.Chain {
	t.Helper()
	c, err := good.Reissue(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// resign signs jws's header and payload again with key: everything as it was but the
// signature, which the leaf does not vouch for.
func resign(t *testing.T, jws string, key *ecdsa.PrivateKey) string {
	t.Helper()
	parts := strings.Split(jws, ".")
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func unsigned(t *testing.T) string {
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256"}`))
	payload := base64.RawURLEncoding.EncodeToString([]byte(`{"notificationType":"SUBSCRIBED"}`))
	return header + "." + payload + "." + base64.RawURLEncoding.EncodeToString(make([]byte, 64))
}

// A notification from an environment not applied is answered and recorded nowhere.
func TestOtherEnvironmentsAreAnsweredNotRecorded(t *testing.T) {
	c := chain(t, appstoredev.Options{})
	a := adapter(t, c.RootPEM())
	n := subscribed()
	n.Environment = "Sandbox"
	raw := body(t, c, n)
	if err := a.Verify(nil, raw, time.Now()); err != nil {
		t.Fatal(err)
	}
	if ev, err := a.Parse(raw); err != nil || ev.Answer == nil || ev.Answer.Outcome != "environment_filtered" {
		t.Fatalf("a sandbox notification: %+v %v", ev, err)
	}
}
