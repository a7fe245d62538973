package signingkeys

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// Algorithm is the one JWS algorithm tollgate signs with: ECDSA P-256 with SHA-256.
const Algorithm = "ES256"

// JWK is a key's public part as a JSON Web Key (RFC 7517): what the key set publishes.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// newKey makes a P-256 key: its kid, its private part as stored (PKCS#8, base64) and its
// public JWK.
func newKey() (kid, private string, public JWK, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", JWK{}, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", JWK{}, err
	}
	public, err = publicJWK(&key.PublicKey)
	return public.Kid, base64.StdEncoding.EncodeToString(der), public, err
}

// publicJWK is pub as a JWK whose kid is its RFC 7638 thumbprint: the kid names the key
// itself, so two processes never give one kid to two keys.
func publicJWK(pub *ecdsa.PublicKey) (JWK, error) {
	point, err := pub.Bytes() // 0x04 ‖ X ‖ Y, 32 bytes each on P-256
	if err != nil {
		return JWK{}, err
	}
	x, y := b64(point[1:33]), b64(point[33:])
	// The thumbprint's members in lexicographic order, without spaces (RFC 7638, 3.2).
	sum := sha256.Sum256(fmt.Appendf(nil, `{"crv":"P-256","kty":"EC","x":"%s","y":"%s"}`, x, y))
	return JWK{Kty: "EC", Crv: "P-256", X: x, Y: y, Kid: b64(sum[:]), Use: "sig", Alg: Algorithm}, nil
}

// parsePrivate reads a stored private key.
func parsePrivate(stored string) (*ecdsa.PrivateKey, error) {
	der, err := base64.StdEncoding.DecodeString(stored)
	if err != nil {
		return nil, err
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, err
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	if !ok || key.Curve != elliptic.P256() {
		return nil, fmt.Errorf("a stored signing key is not a P-256 key")
	}
	return key, nil
}

// header is the protected header of every token: the algorithm, the key and the type.
type header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

// sign is the compact JWS (RFC 7515) of payload under key: header.payload.signature, the
// signature being R ‖ S, 32 bytes each (RFC 7518, 3.4).
func sign(key *ecdsa.PrivateKey, kid string, payload []byte) (string, error) {
	h, err := json.Marshal(header{Alg: Algorithm, Kid: kid, Typ: "JWT"})
	if err != nil {
		return "", err
	}
	input := b64(h) + "." + b64(payload)
	digest := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	if err != nil {
		return "", err
	}
	var sig [64]byte
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + b64(sig[:]), nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
