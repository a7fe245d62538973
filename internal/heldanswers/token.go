package heldanswers

import (
	"bytes"
	"context"
	"encoding/json"
	"time"
)

// Token is an entitlement token as the API answers it.
type Token struct {
	Token     string    `json:"token" doc:"A compact JWS (ES256) to verify with the keys at /.well-known/jwks.json."`
	ExpiresAt time.Time `json:"expires_at" doc:"Its exp: at most ENTITLEMENT_TOKEN_TTL away, and never past the first moment the answer may change by itself."`
}

// claims are an entitlement token's claims.
type claims struct {
	Iss     string          `json:"iss"`
	Sub     string          `json:"sub"`
	Aud     string          `json:"aud"`
	Iat     int64           `json:"iat"`
	Exp     int64           `json:"exp"`
	Jti     string          `json:"jti"`
	Billing json.RawMessage `json:"billing"`
}

// minted is the last token handed out for a user.
type minted struct {
	token   Token
	iat     time.Time
	kid     string
	billing []byte
}

// maxMinted bounds the tokens kept for handing out again; when full it starts afresh.
const maxMinted = 100_000

// Token is userID's entitlement token now. Its exp is TTL after its iat, but never later
// than the first moment the answer may change by itself (and at least a second after
// iat). The last token handed out for the user is handed out again while the answer and
// the signing key are unchanged and more than half its life is left: signing costs more
// than the rest of the request.
func (i *Issuer) Token(ctx context.Context, userID string) (Token, error) {
	encoded, changesAt, err := i.held(ctx, userID)
	if err != nil {
		return Token{}, err
	}
	kid, err := i.opts.Keys.SigningKID(ctx)
	if err != nil {
		return Token{}, err
	}
	now := i.opts.Clock()
	iat := now.Truncate(time.Second)
	exp := iat.Add(i.opts.TTL)
	if !changesAt.IsZero() && changesAt.Before(exp) {
		exp = changesAt.Truncate(time.Second)
		if exp.Before(iat.Add(time.Second)) {
			exp = iat.Add(time.Second)
		}
	}
	if kept, ok := i.kept(userID, kid, encoded, exp, now); ok {
		return kept, nil
	}
	payload, err := json.Marshal(claims{Iss: i.opts.Issuer, Sub: userID, Aud: i.opts.Audience, Iat: iat.Unix(), Exp: exp.Unix(),
		Jti: newJTI(), Billing: encoded})
	if err != nil {
		return Token{}, err
	}
	token, kid, err := i.opts.Keys.Sign(ctx, payload, exp)
	if err != nil {
		return Token{}, err
	}
	t := Token{Token: token, ExpiresAt: exp.UTC()}
	i.keep(userID, minted{token: t, iat: iat, kid: kid, billing: encoded})
	return t, nil
}

// kept is the token last handed out for userID, if it may be handed out again at now: the
// same key, the same answer, an exp no later than a new token's would be, and more than
// half its life left.
func (i *Issuer) kept(userID, kid string, billing []byte, exp, now time.Time) (Token, bool) {
	i.mu.Lock()
	m, ok := i.minted[userID]
	i.mu.Unlock()
	if !ok || m.kid != kid || !bytes.Equal(m.billing, billing) || m.token.ExpiresAt.After(exp) {
		return Token{}, false
	}
	life := m.token.ExpiresAt.Sub(m.iat)
	return m.token, m.token.ExpiresAt.Sub(now) > life/2
}

func (i *Issuer) keep(userID string, m minted) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if len(i.minted) >= maxMinted {
		clear(i.minted)
	}
	i.minted[userID] = m
}
