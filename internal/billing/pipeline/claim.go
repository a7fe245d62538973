package pipeline

import (
	"context"
	"database/sql"
	"errors"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Claim applies a purchase the app reports for its signed-in user (POST
// /api/v1/billing/purchases): the provider's adapter verifies the proof and reads it as the
// subscription's state when the store signed it, which goes through the same ordering as a
// backfill's read (a newer notification still wins), linked to userID. A subscription whose
// canonical row is another user's is refused (ErrPurchaseOfAnother) and nothing changes; a
// product no plan sells is returned as the *billing.Unresolved it is; a purchase that
// entitles nothing (a consumable) changes nothing.
func (p *Pipeline) Claim(ctx context.Context, provider string, proof billing.Proof, userID string) error {
	a, ok := p.adapters[provider]
	claimer, ok2 := a.(billing.Claimer)
	if !ok || !ok2 {
		return billing.ErrUnknownStore
	}
	r, err := claimer.Claim(ctx, proof, userID, p.now())
	if err != nil {
		return err
	}
	if r.Ignore != "" { // verified, and nothing to keep: the answer stands as it is
		p.log.InfoContext(ctx, r.Ignore, "provider", provider, "user_id", userID)
		return nil
	}
	eventID := billing.SnapshotEventID(r.At)
	var w *work
	err = p.db.Request(ctx, func(ctx context.Context) error {
		return p.db.InTx(ctx, func(tx *sql.Tx) error {
			w = newWork(tx, a, billing.ChangeCause{Provider: provider, ProviderEventID: eventID, EventType: r.Type})
			if _, err := p.lock(ctx, w, r.Subscription); err != nil {
				return err
			}
			row, err := w.GetCanonicalSubscription(ctx, dbq.GetCanonicalSubscriptionParams{Provider: provider, ProviderSubscriptionID: r.Subscription})
			switch {
			case err == nil && row.UserID != userID:
				return billing.ErrPurchaseOfAnother
			case err != nil && !errors.Is(err, sql.ErrNoRows):
				return err
			}
			_, err = p.apply(ctx, w, r, eventID)
			return err
		})
	}, billing.IsAnswer)
	if err != nil {
		return err
	}
	p.committed(ctx, []string{w.user}, w.changed)
	if c, ok := a.(billing.Committer); ok {
		ev := billing.Event{ID: eventID, Type: r.Type, Decoded: r.Decoded}
		if err := c.Committed(ctx, ev, billing.OutcomeApplied); err != nil {
			return &RetryError{Err: err} // applied; reporting it again tries the action again
		}
	}
	return nil
}
