package appstore

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// The marker extensions Apple puts on the certificates that sign App Store data: the leaf's
// says it signs App Store receipts, the intermediate's that it is Apple's WWDR CA.
var (
	leafMarker         = asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 6, 11, 1}
	intermediateMarker = asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 6, 2, 1}
)

// Refusals of a signed object, for the log: the answer to any of them is 401.
var (
	errNotJWS        = errors.New("not a compact JWS")
	errAlgorithm     = errors.New("the JWS is not ES256")
	errChainLength   = errors.New("the x5c chain does not hold leaf, intermediate and root")
	errChain         = errors.New("the certificate chain does not verify to a pinned root")
	errLeafMarker    = errors.New("the leaf certificate lacks Apple's receipt-signing marker")
	errInterMarker   = errors.New("the intermediate certificate lacks Apple's WWDR marker")
	errSignature     = errors.New("the JWS signature does not verify with the leaf's key")
	errNoRootsLoaded = errors.New("no root certificate to verify against")
)

// verifier checks App Store signed objects (JWS, ES256) against pinned roots, as Apple's
// own server libraries do: the x5c header holds leaf, intermediate and root; the chain
// verifies to a pinned root at the object's signedDate; the leaf and the intermediate carry
// Apple's markers; the leaf's key signed the object.
type verifier struct {
	roots *x509.CertPool
}

// newVerifier pins the roots in data: one or more certificates, PEM or DER (Apple ships
// its roots, and its libraries' test root, as DER).
func newVerifier(data []byte) (*verifier, error) {
	certs, err := parseRoots(data)
	if err != nil {
		return nil, err
	}
	if len(certs) == 0 {
		return nil, errNoRootsLoaded
	}
	roots := x509.NewCertPool()
	for _, cert := range certs {
		roots.AddCert(cert)
	}
	return &verifier{roots: roots}, nil
}

// parseRoots reads PEM certificates when data holds any PEM block, else DER ones.
func parseRoots(data []byte) ([]*x509.Certificate, error) {
	if !bytes.Contains(data, []byte("-----BEGIN")) {
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, nil
		}
		certs, err := x509.ParseCertificates(data)
		if err != nil {
			return nil, fmt.Errorf("root certificate (neither PEM nor DER): %w", err)
		}
		return certs, nil
	}
	var certs []*x509.Certificate
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return certs, nil
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("root certificate: %w", err)
		}
		certs = append(certs, cert)
	}
}

// jwsHeader is the protected header of a signed object.
type jwsHeader struct {
	Alg string   `json:"alg"`
	X5C []string `json:"x5c"`
}

// verify checks jws and decodes its payload into into. The certificates are checked at
// the payload's signedDate (when it has one, else now), as Apple's libraries check them.
func (v *verifier) verify(jws string, into any, now time.Time) error {
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		return errNotJWS
	}
	var header jwsHeader
	if err := decodeSegment(parts[0], &header); err != nil {
		return err
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return errNotJWS
	}
	var dated struct {
		SignedDate *int64 `json:"signedDate"`
	}
	if err := json.Unmarshal(payload, &dated); err != nil {
		return errNotJWS
	}
	at := now
	if dated.SignedDate != nil {
		at = time.UnixMilli(*dated.SignedDate)
	}
	if header.Alg != "ES256" {
		return errAlgorithm
	}
	leaf, err := v.verifyChain(header.X5C, at)
	if err != nil {
		return err
	}
	if err := verifySignature(leaf, parts[0]+"."+parts[1], parts[2]); err != nil {
		return err
	}
	return json.Unmarshal(payload, into)
}

// verifyChain verifies leaf → intermediate → a pinned root at t and returns the leaf.
func (v *verifier) verifyChain(x5c []string, t time.Time) (*x509.Certificate, error) {
	if len(x5c) != 3 {
		return nil, errChainLength
	}
	var certs [2]*x509.Certificate
	for i := range certs {
		der, err := base64.StdEncoding.DecodeString(x5c[i])
		if err != nil {
			return nil, errChain
		}
		if certs[i], err = x509.ParseCertificate(der); err != nil {
			return nil, errChain
		}
	}
	leaf, intermediate := certs[0], certs[1]
	intermediates := x509.NewCertPool()
	intermediates.AddCert(intermediate)
	chains, err := leaf.Verify(x509.VerifyOptions{
		Roots: v.roots, Intermediates: intermediates, CurrentTime: t, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errChain, err)
	}
	if !hasExtension(leaf, leafMarker) {
		return nil, errLeafMarker
	}
	for _, chain := range chains {
		if len(chain) == 3 && hasExtension(chain[1], intermediateMarker) {
			return leaf, nil
		}
	}
	return nil, errInterMarker
}

func hasExtension(cert *x509.Certificate, id asn1.ObjectIdentifier) bool {
	for _, ext := range cert.Extensions {
		if ext.Id.Equal(id) {
			return true
		}
	}
	return false
}

// verifySignature checks a JWS ES256 signature (r ‖ s, 32 bytes each) over signingInput
// with the leaf's P-256 key.
func verifySignature(leaf *x509.Certificate, signingInput, signature string) error {
	key, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || key.Curve != elliptic.P256() {
		return errSignature
	}
	sig, err := base64.RawURLEncoding.DecodeString(signature)
	if err != nil || len(sig) != 64 {
		return errSignature
	}
	digest := sha256.Sum256([]byte(signingInput))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(key, digest[:], r, s) {
		return errSignature
	}
	return nil
}

// decodeSegment decodes a base64url JSON segment of a JWS.
func decodeSegment(segment string, into any) error {
	raw, err := base64.RawURLEncoding.DecodeString(segment)
	if err != nil || json.Unmarshal(raw, into) != nil {
		return errNotJWS
	}
	return nil
}

// payloadOf decodes a JWS's payload without verifying it: for an object already verified
// when its request was received (a stored notification, on replay).
func payloadOf(jws string, into any) error {
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		return errNotJWS
	}
	return decodeSegment(parts[1], into)
}
