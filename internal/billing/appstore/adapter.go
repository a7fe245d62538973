// Package appstore is the App Store's adapter: App Store Server Notifications V2, each a
// JWS signed by a certificate chain that verifies to Apple's root (Apple Root CA - G3,
// embedded; APPSTORE_ROOT_CERTS replaces it). A subscription is keyed by its original
// transaction, ordered by the notifications' signedDate, and linked to its user by the
// transaction's appAccountToken.
package appstore

import (
	_ "embed"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// appleRootG3 is Apple Root CA - G3 (SHA-256 fingerprint 63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:
// 9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79), which signs the
// intermediates of App Store data, from https://www.apple.com/certificateauthority/.
//
//go:embed AppleRootCA-G3.pem
var appleRootG3 []byte

var errBundle = errors.New("the notification is for another app (bundleId)")

// Config sets the adapter up.
type Config struct {
	// BundleID is the app's bundle id: notifications for any other are refused.
	BundleID string
	// RootCerts, when not nil, are the roots (PEM or DER) that replace Apple's; empty ones
	// are an error, never a fall-back to Apple's.
	RootCerts []byte
	// Environments are those whose notifications are applied (Production, Sandbox);
	// others are answered 200 and recorded nowhere.
	Environments []string
}

// Adapter is the App Store's billing.Adapter.
type Adapter struct {
	bundleID     string
	environments []string
	verifier     *verifier
}

// New builds the adapter; it fails when the root certificates cannot be read.
func New(cfg Config) (*Adapter, error) {
	roots := cfg.RootCerts
	if roots == nil {
		roots = appleRootG3
	}
	v, err := newVerifier(roots)
	if err != nil {
		return nil, err
	}
	return &Adapter{bundleID: cfg.BundleID, environments: cfg.Environments, verifier: v}, nil
}

// Provider is the App Store's name: its webhook route's last segment, the key of its rows.
const Provider = "appstore"

func (a *Adapter) Provider() string { return Provider }

// Verify checks the signed payload and the transaction and renewal signed inside it, and
// that they are about this app. The signature is in the body: a body that is not
// {"signedPayload": …} is a 400.
func (a *Adapter) Verify(_ http.Header, body []byte, now time.Time) error {
	var req request
	if err := json.Unmarshal(body, &req); err != nil || req.SignedPayload == "" {
		return billing.BadJSON(errors.New(`the body is not {"signedPayload": "<JWS>"}`))
	}
	var n notification
	if err := a.verifier.verify(req.SignedPayload, &n, now); err != nil {
		return err
	}
	if bundle, _ := n.bundleAndEnvironment(); bundle != a.bundleID {
		return errBundle
	}
	if n.Data == nil {
		return nil
	}
	if n.Data.SignedTransactionInfo != "" {
		var tx transaction
		if err := a.verifier.verify(n.Data.SignedTransactionInfo, &tx, now); err != nil {
			return err
		}
		if tx.BundleID != a.bundleID {
			return errBundle
		}
	}
	if n.Data.SignedRenewalInfo != "" {
		var r renewal
		if err := a.verifier.verify(n.Data.SignedRenewalInfo, &r, now); err != nil {
			return err
		}
	}
	return nil
}

// parsed is a notification with its transaction and renewal information decoded.
type parsed struct {
	notification notification
	transaction  transaction
	renewal      renewal
}

// decode reads a verified body (or a stored one, verified when it was received).
func decode(body []byte) (*parsed, error) {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, billing.BadJSON(billing.ErrNotObject)
	}
	var p parsed
	if err := payloadOf(req.SignedPayload, &p.notification); err != nil {
		return nil, billing.BadJSON(err)
	}
	if d := p.notification.Data; d != nil {
		if d.SignedTransactionInfo != "" {
			if err := payloadOf(d.SignedTransactionInfo, &p.transaction); err != nil {
				return nil, billing.BadJSON(err)
			}
		}
		if d.SignedRenewalInfo != "" {
			if err := payloadOf(d.SignedRenewalInfo, &p.renewal); err != nil {
				return nil, billing.BadJSON(err)
			}
		}
	}
	return &p, nil
}

// Parse names the notification by its notificationUUID; one from an environment not
// applied here is answered without being recorded.
func (a *Adapter) Parse(body []byte) (billing.Event, error) {
	p, err := decode(body)
	if err != nil {
		return billing.Event{}, err
	}
	if _, env := p.notification.bundleAndEnvironment(); !slices.Contains(a.environments, env) {
		return billing.Event{Answer: &billing.Answer{Outcome: "environment_filtered", Log: "App Store notification from an environment not applied here (APPSTORE_ENVIRONMENTS)"}}, nil
	}
	if err := billing.CheckEventID("notificationUUID", p.notification.NotificationUUID); err != nil {
		return billing.Event{}, billing.BadEventID(err)
	}
	return billing.Event{ID: p.notification.NotificationUUID, Type: p.notification.NotificationType, Decoded: p}, nil
}
