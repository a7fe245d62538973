package appstore

// App Store Server Notifications V2, as tollgate reads them: the request body, the signed
// payload, and the signed transaction and renewal information nested in it.

import (
	"math"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// request is the body Apple posts.
type request struct {
	SignedPayload string `json:"signedPayload"`
}

// notification is responseBodyV2DecodedPayload.
type notification struct {
	NotificationType string `json:"notificationType"`
	Subtype          string `json:"subtype"`
	NotificationUUID string `json:"notificationUUID"`
	Data             *struct {
		BundleID              string `json:"bundleId"`
		Environment           string `json:"environment"`
		SignedTransactionInfo string `json:"signedTransactionInfo"`
		SignedRenewalInfo     string `json:"signedRenewalInfo"`
	} `json:"data"`
	Summary *struct {
		BundleID    string `json:"bundleId"`
		Environment string `json:"environment"`
	} `json:"summary"`
	// EXTERNAL_PURCHASE_TOKEN names its app here, and no environment.
	ExternalPurchaseToken *struct {
		ExternalPurchaseID string `json:"externalPurchaseId"`
		BundleID           string `json:"bundleId"`
	} `json:"externalPurchaseToken"`
	// RESCIND_CONSENT names its app and environment here.
	AppData *struct {
		BundleID    string `json:"bundleId"`
		Environment string `json:"environment"`
	} `json:"appData"`
	SignedDate int64 `json:"signedDate"`
}

// bundleAndEnvironment are the app and environment the notification is about, wherever
// its type puts them, as Apple's libraries read them: an external purchase token is
// Sandbox when its externalPurchaseId says so (its prefix), else Production.
func (n notification) bundleAndEnvironment() (string, string) {
	switch {
	case n.Data != nil:
		return n.Data.BundleID, n.Data.Environment
	case n.Summary != nil:
		return n.Summary.BundleID, n.Summary.Environment
	case n.ExternalPurchaseToken != nil:
		if strings.HasPrefix(n.ExternalPurchaseToken.ExternalPurchaseID, "SANDBOX") {
			return n.ExternalPurchaseToken.BundleID, "Sandbox"
		}
		return n.ExternalPurchaseToken.BundleID, "Production"
	case n.AppData != nil:
		return n.AppData.BundleID, n.AppData.Environment
	}
	return "", ""
}

// transaction is JWSTransactionDecodedPayload: times are milliseconds since the epoch.
type transaction struct {
	OriginalTransactionID string `json:"originalTransactionId"`
	TransactionID         string `json:"transactionId"`
	BundleID              string `json:"bundleId"`
	ProductID             string `json:"productId"`
	Type                  string `json:"type"`
	AppAccountToken       string `json:"appAccountToken"`
	ExpiresDate           *int64 `json:"expiresDate"`
	PurchaseDate          *int64 `json:"purchaseDate"`
	OfferType             *int   `json:"offerType"`
	OfferDiscountType     string `json:"offerDiscountType"`
	// Price is in milliunits of Currency (9990 for 9.99).
	Price    *int64 `json:"price"`
	Currency string `json:"currency"`
	// For a transaction the app reports (Claim).
	Environment    string `json:"environment"`
	SignedDate     int64  `json:"signedDate"`
	RevocationDate *int64 `json:"revocationDate"`
}

// freeTrial says whether the transaction is an introductory offer's free trial.
func (t transaction) freeTrial() bool {
	return t.OfferType != nil && *t.OfferType == 1 && t.OfferDiscountType == "FREE_TRIAL"
}

// amount is the price in the currency's minor unit, when the transaction says.
func (t transaction) amount() (int64, string) {
	if t.Price == nil || len(t.Currency) != 3 || *t.Price < 0 {
		return 0, ""
	}
	minor := float64(*t.Price) * math.Pow10(billing.Decimals(t.Currency)) / 1000
	return int64(math.Round(minor)), strings.ToLower(t.Currency)
}

// period is the billing period the transaction paid for, from its dates (the payload
// names a product, not its period).
func (t transaction) period() string {
	start, end := millis(t.PurchaseDate), millis(t.ExpiresDate)
	if start == nil || end == nil {
		return ""
	}
	return billing.PeriodBetween(*start, *end)
}

// renewal is JWSRenewalInfoDecodedPayload.
type renewal struct {
	GracePeriodExpiresDate *int64 `json:"gracePeriodExpiresDate"`
	// AutoRenewStatus is 1 while the subscription renews, 0 once the customer turned
	// renewal off (nil: not said).
	AutoRenewStatus *int  `json:"autoRenewStatus"`
	SignedDate      int64 `json:"signedDate"`
}

// millis is a time in milliseconds since the epoch, or nil.
func millis(ms *int64) *time.Time {
	if ms == nil || *ms <= 0 {
		return nil
	}
	t := time.UnixMilli(*ms).UTC()
	return &t
}
