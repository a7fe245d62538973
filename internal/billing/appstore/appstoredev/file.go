package appstoredev

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// Save writes the chain, its certificates and the keys of its leaf and root, to path (0600),
// and the root alone to path + ".root.pem", for APPSTORE_ROOT_CERTS.
func (c *Chain) Save(path string) error {
	var out []byte
	for _, cert := range []*x509.Certificate{c.Root, c.Intermediate, c.Leaf} {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...)
	}
	for _, key := range []*ecdsa.PrivateKey{c.LeafKey, c.rootKey} {
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})...)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		return err
	}
	return os.WriteFile(RootPath(path), c.RootPEM(), 0o644)
}

// RootPath is where Save writes the root of the chain saved at path.
func RootPath(path string) string { return path + ".root.pem" }

// Load reads a chain Save wrote.
func Load(path string) (*Chain, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	var keys []*ecdsa.PrivateKey
	for {
		var block *pem.Block
		if block, raw = pem.Decode(raw); block == nil {
			break
		}
		switch block.Type {
		case "CERTIFICATE":
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			certs = append(certs, cert)
		case "EC PRIVATE KEY":
			key, err := x509.ParseECPrivateKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			keys = append(keys, key)
		}
	}
	if len(certs) != 3 || len(keys) != 2 {
		return nil, errors.New(path + ": not a test chain (want root, intermediate and leaf, and two keys)")
	}
	return &Chain{Root: certs[0], Intermediate: certs[1], Leaf: certs[2], LeafKey: keys[0], rootKey: keys[1]}, nil
}

// SignDecoded signs a notification written decoded, as Apple's documentation shows it
// (responseBodyV2DecodedPayload): the objects under data.signedTransactionInfo and
// data.signedRenewalInfo are signed first, then the whole. It gives the body Apple posts.
func (c *Chain) SignDecoded(payload map[string]any) ([]byte, error) {
	if data, ok := payload["data"].(map[string]any); ok {
		for _, field := range []string{"signedTransactionInfo", "signedRenewalInfo"} {
			if object, ok := data[field].(map[string]any); ok {
				signed, err := c.Sign(object)
				if err != nil {
					return nil, err
				}
				data[field] = signed
			}
		}
	}
	signed, err := c.Sign(payload)
	if err != nil {
		return nil, err
	}
	return []byte(`{"signedPayload":"` + signed + `"}`), nil
}
