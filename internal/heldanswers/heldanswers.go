// Package heldanswers hands out a user's billing answer for an app to hold rather than ask
// for: the signed entitlement token (POST /api/v1/entitlements/token), and the tollgate
// claim of the user's access token (the identity service's Custom Access Token hook, and
// the development identity). Both say the answer as it is now, never for longer than it
// is known to hold: until the first moment it may change with no event (a period's, a
// trial's or a grant's end).
package heldanswers

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/reader"
)

// MaxBilling is the largest billing object a token or claim carries, encoded: past it the
// entitlements are left out (entitlements_omitted), so that a token stays under about
// 2 KiB — small enough for a header or a cookie.
const MaxBilling = 1280

// Answers reads users' answers (the reader).
type Answers interface {
	Held(ctx context.Context, userID string) (reader.Held, error)
}

// Signer signs a token's claims (signingkeys.Keys).
type Signer interface {
	Sign(ctx context.Context, payload []byte, exp time.Time) (token, kid string, err error)
	SigningKID(ctx context.Context) (string, error)
}

// Options configures an Issuer.
type Options struct {
	Answers Answers
	Keys    Signer
	// Issuer is the tokens' iss (PUBLIC_URL); Audience their aud; TTL their longest life.
	Issuer, Audience string
	TTL              time.Duration
	Clock            func() time.Time
	Log              *slog.Logger
}

// Issuer hands out held answers.
type Issuer struct {
	opts   Options
	warned atomic.Bool // the warning about entitlements left out is given once
	mu     sync.Mutex
	minted map[string]minted // by user: the last token, handed out again while it fits
}

// New returns an Issuer.
func New(opts Options) *Issuer {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Issuer{opts: opts, minted: map[string]minted{}}
}

// held is userID's answer now: its billing object, encoded, and when it may change by
// itself (zero: not by itself).
func (i *Issuer) held(ctx context.Context, userID string) ([]byte, time.Time, error) {
	h, err := i.opts.Answers.Held(ctx, userID)
	if err != nil {
		return nil, time.Time{}, err
	}
	encoded, err := billing.EncodeView(h.View)
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(encoded) > MaxBilling {
		if !i.warned.Swap(true) {
			plan := ""
			if h.View.Plan != nil {
				plan = h.View.Plan.Key
			}
			i.opts.Log.WarnContext(ctx, "a plan's entitlements are too large for an entitlement token or claim: they are left out (entitlements_omitted)",
				"plan", plan, "bytes", len(encoded), "max", MaxBilling)
		}
		h.View.Entitlements, h.View.EntitlementsOmitted = nil, true
		if encoded, err = billing.EncodeView(h.View); err != nil {
			return nil, time.Time{}, err
		}
	}
	return encoded, h.ChangesAt, nil
}

// Claim is the tollgate claim of userID's access token: the billing object, and
// valid_until (UNIX seconds) when the answer may change by itself.
func (i *Issuer) Claim(ctx context.Context, userID string) (json.RawMessage, error) {
	encoded, changesAt, err := i.held(ctx, userID)
	if err != nil || changesAt.IsZero() {
		return encoded, err
	}
	// {…billing…, "valid_until": N}: the object with one member more.
	claim := append(bytes.TrimSuffix(encoded, []byte("}")), `,"valid_until":`...)
	claim = append(json.RawMessage(claim), strconv.AppendInt(nil, changesAt.Unix(), 10)...)
	return append(claim, '}'), nil
}

func newJTI() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
