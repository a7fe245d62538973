// Package appstoredev builds certificate chains shaped as Apple's (a root, an intermediate
// with Apple's WWDR marker, a leaf with the receipt-signing marker) and signs App Store
// objects with them, so that `tollgate webhook send --provider appstore` can produce
// notifications the App Store adapter verifies once APPSTORE_ROOT_CERTS names the root: a
// feature of the product, for trying the App Store locally. The tests sign with it too.
package appstoredev

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"time"
)

// The marker extensions, as Apple's certificates carry them.
var (
	LeafMarker         = asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 6, 11, 1}
	IntermediateMarker = asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 6, 2, 1}
)

// Options bend a chain out of shape, for tests of what must be refused.
type Options struct {
	NoLeafMarker, NoIntermediateMarker bool
	// LeafNotAfter, when set, ends the leaf's validity (the default is ten years on).
	LeafNotAfter time.Time
}

// Chain is a root, an intermediate and a leaf, and the leaf's key.
type Chain struct {
	Root, Intermediate, Leaf *x509.Certificate
	LeafKey                  *ecdsa.PrivateKey
	rootKey                  *ecdsa.PrivateKey
}

// validity is when test certificates are valid: from a year ago for ten years.
func validity() (time.Time, time.Time) {
	return time.Now().Add(-365 * 24 * time.Hour), time.Now().Add(10 * 365 * 24 * time.Hour)
}

// New builds a chain valid from a year ago.
func New(opts Options) (*Chain, error) {
	notBefore, notAfter := validity()
	root, rootKey, err := certificate("Test Root CA - G3", nil, nil, notBefore, notAfter, true, nil)
	if err != nil {
		return nil, err
	}
	return issue(root, rootKey, opts)
}

// Reissue is a new intermediate and leaf, bent by opts, under the same root.
func (c *Chain) Reissue(opts Options) (*Chain, error) { return issue(c.Root, c.rootKey, opts) }

// issue makes the intermediate and the leaf under root.
func issue(root *x509.Certificate, rootKey *ecdsa.PrivateKey, opts Options) (*Chain, error) {
	notBefore, notAfter := validity()
	var interMarker []pkix.Extension
	if !opts.NoIntermediateMarker {
		interMarker = []pkix.Extension{{Id: IntermediateMarker, Value: []byte{5, 0}}}
	}
	inter, interKey, err := certificate("Test WWDR Intermediate", root, rootKey, notBefore, notAfter, true, interMarker)
	if err != nil {
		return nil, err
	}
	var leafMarker []pkix.Extension
	if !opts.NoLeafMarker {
		leafMarker = []pkix.Extension{{Id: LeafMarker, Value: []byte{5, 0}}}
	}
	leafNotAfter := notAfter
	if !opts.LeafNotAfter.IsZero() {
		leafNotAfter = opts.LeafNotAfter
	}
	leaf, leafKey, err := certificate("Test App Store Signing", inter, interKey, notBefore, leafNotAfter, false, leafMarker)
	if err != nil {
		return nil, err
	}
	return &Chain{Root: root, Intermediate: inter, Leaf: leaf, LeafKey: leafKey, rootKey: rootKey}, nil
}

// certificate makes a certificate signed by parent's key (self-signed when parent is nil).
func certificate(name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, notBefore, notAfter time.Time, ca bool, extra []pkix.Extension) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name, Organization: []string{"tollgate tests"}},
		NotBefore: notBefore, NotAfter: notAfter, ExtraExtensions: extra,
		BasicConstraintsValid: true, IsCA: ca, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	if ca {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// RootPEM is the root certificate as APPSTORE_ROOT_CERTS takes it.
func (c *Chain) RootPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Root.Raw})
}

// Sign signs payload (encoded as JSON) as the App Store does: ES256 with the leaf's key,
// the chain in x5c.
func (c *Chain) Sign(payload any) (string, error) {
	header, err := json.Marshal(map[string]any{"alg": "ES256", "x5c": []string{
		base64.StdEncoding.EncodeToString(c.Leaf.Raw),
		base64.StdEncoding.EncodeToString(c.Intermediate.Raw),
		base64.StdEncoding.EncodeToString(c.Root.Raw),
	}})
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return "", err
	}
	input := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(body)
	digest := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, c.LeafKey, digest[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}
