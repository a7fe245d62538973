package appstoredev

import (
	"cmp"
	"encoding/json"
	"time"
)

// Transaction is the part of a signed transaction tests vary.
type Transaction struct {
	OriginalTransactionID string
	TransactionID         string
	BundleID              string
	ProductID             string
	AppAccountToken       string
	Expires               time.Time // zero: no expiresDate
	Purchased             time.Time // zero: no purchaseDate
	FreeTrial             bool
	Price                 int64 // milliunits; zero: none
	Currency              string
	// Type is Apple's transaction type; empty: "Auto-Renewable Subscription".
	Type string
	// Revoked, when set, is the revocationDate: Apple refunded or revoked it then.
	Revoked time.Time
}

// Notification is an App Store Server Notification V2 to sign.
type Notification struct {
	UUID, Type, Subtype string
	BundleID            string
	Environment         string // default Production
	Signed              time.Time
	Transaction         *Transaction
	// GraceUntil, when set, is the renewal information's gracePeriodExpiresDate.
	GraceUntil time.Time
}

// Body signs n, its transaction and its renewal information with the chain and gives the
// request body Apple would post: {"signedPayload": …}.
func (c *Chain) Body(n Notification) ([]byte, error) {
	payload, err := c.SignedPayload(n)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]string{"signedPayload": payload})
}

// SignedPayload is the notification's signed payload.
func (c *Chain) SignedPayload(n Notification) (string, error) {
	if n.Environment == "" {
		n.Environment = "Production"
	}
	data := map[string]any{"bundleId": n.BundleID, "environment": n.Environment, "appAppleId": 1234567890, "status": 1}
	if t := n.Transaction; t != nil {
		signed, err := c.SignTransaction(*t, n.Signed, n.Environment)
		if err != nil {
			return "", err
		}
		data["signedTransactionInfo"] = signed
		info := map[string]any{"originalTransactionId": t.OriginalTransactionID, "autoRenewProductId": t.ProductID,
			"productId": t.ProductID, "autoRenewStatus": 1, "environment": n.Environment, "signedDate": n.Signed.UnixMilli()}
		if !n.GraceUntil.IsZero() {
			info["gracePeriodExpiresDate"] = n.GraceUntil.UnixMilli()
		}
		if data["signedRenewalInfo"], err = c.Sign(info); err != nil {
			return "", err
		}
	}
	payload := map[string]any{"notificationType": n.Type, "notificationUUID": n.UUID, "data": data,
		"version": "2.0", "signedDate": n.Signed.UnixMilli()}
	if n.Subtype != "" {
		payload["subtype"] = n.Subtype
	}
	return c.Sign(payload)
}

// SignTransaction is a signed transaction (JWSTransaction), as the device holds it too.
func (c *Chain) SignTransaction(t Transaction, signed time.Time, environment string) (string, error) {
	tx := map[string]any{
		"originalTransactionId": t.OriginalTransactionID, "transactionId": t.TransactionID, "bundleId": t.BundleID,
		"productId": t.ProductID, "purchaseDate": signed.UnixMilli(), "type": cmp.Or(t.Type, "Auto-Renewable Subscription"),
		"inAppOwnershipType": "PURCHASED", "environment": environment, "signedDate": signed.UnixMilli(),
	}
	if t.AppAccountToken != "" {
		tx["appAccountToken"] = t.AppAccountToken
	}
	if !t.Expires.IsZero() {
		tx["expiresDate"] = t.Expires.UnixMilli()
	}
	if !t.Purchased.IsZero() {
		tx["purchaseDate"] = t.Purchased.UnixMilli()
	}
	if t.FreeTrial {
		tx["offerType"], tx["offerDiscountType"] = 1, "FREE_TRIAL"
	}
	if t.Price > 0 {
		tx["price"], tx["currency"] = t.Price, t.Currency
	}
	if !t.Revoked.IsZero() {
		tx["revocationDate"] = t.Revoked.UnixMilli()
	}
	return c.Sign(tx)
}
