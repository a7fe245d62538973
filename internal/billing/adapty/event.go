package adapty

// The mobile provider's events, as tollgate reads them.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// envelope derives the id and type of a mobile event. Real mobile payloads carry no
// event_id, so when it is absent (or null) the id is synthesised from fields that are fixed
// for one event and that every redelivery repeats (docs/providers.md). An event_id
// that is present must be a proper id.
func envelope(top map[string]json.RawMessage) (billing.Event, error) {
	env := billing.Event{Type: billing.Text(top["event_type"])}
	if raw, ok := top["event_id"]; !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		env.ID = syntheticMobileID(top)
		return env, nil
	}
	var err error
	env.ID, err = billing.EventID(top, "event_id")
	return env, err
}

func syntheticMobileID(top map[string]json.RawMessage) string {
	transactionID := billing.Text(top["transaction_id"])
	if transactionID == "" {
		var props map[string]json.RawMessage
		if json.Unmarshal(top["event_properties"], &props) == nil {
			transactionID = billing.Text(props["transaction_id"])
		}
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{
		billing.Text(top["event_type"]), billing.Text(top["event_datetime"]), billing.Text(top["profile_id"]), transactionID,
	}, "|")))
	return "mobile_synth_" + hex.EncodeToString(sum[:])[:32]
}

// mobileEvent holds the fields of a mobile provider event tollgate uses. The provider
// omits empty fields.
type mobileEvent struct {
	EventType       string  `json:"event_type"`
	EventDatetime   string  `json:"event_datetime"`
	ProfileID       string  `json:"profile_id"`
	CustomerUserID  *string `json:"customer_user_id"`
	EventProperties struct {
		VendorProductID       string `json:"vendor_product_id"`
		OriginalTransactionID string `json:"original_transaction_id"`
		TransactionID         string `json:"transaction_id"`
		SubscriptionExpiresAt string `json:"subscription_expires_at"`
		PurchaseDate          string `json:"purchase_date"`
		ExpiresAt             string `json:"expires_at"`
		AccessLevelID         string `json:"access_level_id"`
		IsActive              *bool  `json:"is_active"`
		IsRefund              *bool  `json:"is_refund"`
		IsInGracePeriod       *bool  `json:"is_in_grace_period"`
		WillRenew             *bool  `json:"will_renew"`
		IsLifetime            *bool  `json:"is_lifetime"`
		// The price in the buyer's currency, in its major unit (9.99).
		PriceLocal *float64 `json:"price_local"`
		Currency   string   `json:"currency"`
	} `json:"event_properties"`
}

func decodeMobileEvent(body []byte) (mobileEvent, time.Time, error) {
	var ev mobileEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return ev, time.Time{}, billing.Invalidf("mobile event: %v", billing.JSONProblem(err))
	}
	at, err := parseMobileTime(ev.EventDatetime)
	if err != nil {
		return ev, time.Time{}, billing.Invalidf("event_datetime: %v", err)
	}
	return ev, at, nil
}

// subscriptionKey is the mobile subscription's stable id: the original transaction, else the
// transaction, else the profile's access level.
func (ev mobileEvent) subscriptionKey() string {
	p := ev.EventProperties
	switch {
	case p.OriginalTransactionID != "":
		return p.OriginalTransactionID
	case p.TransactionID != "":
		return p.TransactionID
	case ev.ProfileID != "":
		return "profile:" + ev.ProfileID + ":" + p.AccessLevelID
	}
	return ""
}

// mobileTimeLayouts are the mobile provider's timestamp formats: six fractional digits and a
// zone without a colon, and RFC 3339 for good measure.
var mobileTimeLayouts = []string{"2006-01-02T15:04:05.999999-0700", "2006-01-02T15:04:05-0700", time.RFC3339Nano}

func parseMobileTime(s string) (time.Time, error) {
	for _, layout := range mobileTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	if s == "" {
		return time.Time{}, errors.New("missing")
	}
	return time.Time{}, errors.New("not a timestamp")
}

// optionalMobileTime parses s when it is present.
func optionalMobileTime(field, s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := parseMobileTime(s)
	if err != nil {
		return nil, billing.Invalidf("%s: %v", field, err)
	}
	return &t, nil
}
