package billing

import "time"

// Grant is one grant (a plan given by hand, sold by no store) as stored: who has which plan until when, why and on whose word, and
// whether it was revoked or its end recorded.
type Grant struct {
	ID     string    `json:"id"`
	UserID string    `json:"user_id"`
	Plan   string    `json:"plan"`
	Starts time.Time `json:"starts_at"`
	Ends   time.Time `json:"ends_at"`
	Reason string    `json:"reason"`
	// By is who granted it: an operator's e-mail, "key:<name>" or "cli:<OS user>".
	By           string     `json:"granted_by"`
	Revoked      *time.Time `json:"revoked_at,omitempty"`
	RevokedBy    string     `json:"revoked_by,omitempty"`
	RevokeReason string     `json:"revoke_reason,omitempty"`
	// EndRecorded: the event of its end has been applied.
	EndRecorded bool `json:"end_recorded,omitempty"`
}

// End is when the grant stops entitling: its end, or its revocation when earlier.
func (g Grant) End() time.Time {
	if g.Revoked != nil && g.Revoked.Before(g.Ends) {
		return *g.Revoked
	}
	return g.Ends
}

// Live says whether the grant entitles at t.
func (g Grant) Live(t time.Time) bool { return g.End().After(t) }

// Ended says whether the grant was revoked or its end recorded.
func (g Grant) Ended() bool { return g.Revoked != nil || g.EndRecorded }

// Status is the grant's canonical status at t: active until its end, expired from then,
// recorded or not.
func (g Grant) Status(t time.Time) string {
	if g.Live(t) && !g.Ended() {
		return StatusActive
	}
	return StatusExpired
}
