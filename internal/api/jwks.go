package api

import (
	"fmt"

	"github.com/tollgate/tollgate/internal/jwks"
)

// ErrNoKeySet means no key set has ever been loaded, so no token can be judged: the API
// answers 503, not 401, and the client retries.
var ErrNoKeySet = jwks.ErrNoKeySet

// ErrNoIdentityService is ErrNoKeySet because none is configured (no AUTH_URL or
// AUTH_JWKS_URL): waiting will not help, and the answer says so.
var ErrNoIdentityService = fmt.Errorf("%w: no identity service is configured", jwks.ErrNoURL)

// KeySet is the identity service's key set (internal/jwks, which Play's push tokens use
// too).
type KeySet = jwks.KeySet

// KeySetOptions tune a KeySet.
type KeySetOptions = jwks.Options

// NewKeySet prepares the identity service's key set at url.
func NewKeySet(url string, opts KeySetOptions) *KeySet {
	opts.Name = "the identity service's key set"
	return jwks.New(url, opts)
}
