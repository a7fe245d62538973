package playdev

import (
	"encoding/json"

	"google.golang.org/api/androidpublisher/v3"
)

// kept is what the stand-in was told — the purchases it reports, the voided purchases it
// lists, its acknowledgements — as Config.Save is given it and Config.Saved gives it back:
// a development server restarted keeps every purchase Google "knows".
type kept struct {
	Purchases map[string]*androidpublisher.SubscriptionPurchaseV2 `json:"purchases"`
	Products  map[string]*androidpublisher.ProductPurchase        `json:"products"`
	Voided    []*androidpublisher.VoidedPurchase                  `json:"voided"`
	Acks      map[string]int                                      `json:"acks"`
	AckedAs   map[string]string                                   `json:"acked_as"`
}

// restore takes back what an earlier stand-in kept (nothing when saved is empty).
func (g *Google) restore(saved []byte) error {
	if len(saved) == 0 {
		return nil
	}
	var k kept
	if err := json.Unmarshal(saved, &k); err != nil {
		return err
	}
	for token, p := range k.Purchases {
		g.purchases[token] = p
	}
	for token, p := range k.Products {
		g.products[token] = p
	}
	for token, n := range k.Acks {
		g.acks[token] = n
	}
	for token, sub := range k.AckedAs {
		g.ackedAs[token] = sub
	}
	g.voided = append(g.voided, k.Voided...)
	return nil
}

// changed hands what the stand-in holds now to Config.Save, if set. The caller holds g.mu.
func (g *Google) changed() {
	if g.cfg.Save == nil {
		return
	}
	state, err := json.Marshal(kept{Purchases: g.purchases, Products: g.products, Voided: g.voided, Acks: g.acks, AckedAs: g.ackedAs})
	if err == nil {
		g.cfg.Save(state)
	}
}
