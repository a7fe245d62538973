package appstoredev

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// historyPage is how many notifications a page of Get Notification History holds.
const historyPage = 20

// API stands in for the App Store Server API: it keeps the notifications "sent" as their
// history and each subscription's status, and checks every request's token as Apple does:
// Apple on a good day (appstoretest adds its faults, for tests). Its In-App Purchase key is
// made on New; PrivateKeyPEM is its .p8.
type API struct {
	Chain                     *Chain
	KeyID, IssuerID, BundleID string
	Environment               string
	PrivateKeyPEM             []byte
	// Clock is the stand-in's now, which its history window is measured from (default
	// time.Now).
	Clock func() time.Time

	key      *ecdsa.PrivateKey
	mu       sync.Mutex
	history  []sent // in the order they were sent
	statuses map[string]status
	refusals []string // why each refused token was
}

// sent is a notification in the history: its signed payload, and its signedDate read once.
type sent struct {
	payload string
	signed  int64
}

type status struct {
	code                 int
	transaction, renewal string
}

// NewAPI is a stand-in signing with chain, for the app bundleID in environment.
func NewAPI(chain *Chain, bundleID, environment string) (*API, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &API{
		Chain: chain, KeyID: "TESTKEY123", IssuerID: "57246542-96fe-1a63-e053-0824d011072a", BundleID: bundleID, Environment: environment,
		PrivateKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), key: key, statuses: map[string]status{},
		Clock: time.Now,
	}, nil
}

// Send records n as sent: it joins the history, whether or not anyone received it. It
// returns the body a delivery would have carried.
func (a *API) Send(n Notification) ([]byte, error) {
	if n.Environment == "" {
		n.Environment = a.Environment
	}
	payload, err := a.Chain.SignedPayload(n)
	if err != nil {
		return nil, err
	}
	a.AddHistory(payload)
	return json.Marshal(map[string]string{"signedPayload": payload})
}

// AddHistory adds a signed payload as it is, forged or not, to the history.
func (a *API) AddHistory(signedPayload string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.history = append(a.history, sent{payload: signedPayload, signed: signedDate(signedPayload)})
}

// Status is what Get All Subscription Statuses answers for one original transaction:
// Apple's status code (1 active … 5 revoked), its latest transaction and renewal
// information, signed at Signed.
type Status struct {
	Transaction Transaction
	Code        int
	Signed      time.Time
	// AutoRenew is the renewal information's autoRenewStatus; GraceUntil, when set, its
	// gracePeriodExpiresDate.
	AutoRenew  bool
	GraceUntil time.Time
}

// SetStatus makes s what Get All Subscription Statuses answers for its original
// transaction.
func (a *API) SetStatus(s Status) error {
	t := s.Transaction
	tx, err := a.Chain.SignTransaction(t, s.Signed, a.Environment)
	if err != nil {
		return err
	}
	renew := 0
	if s.AutoRenew {
		renew = 1
	}
	info := map[string]any{"originalTransactionId": t.OriginalTransactionID, "autoRenewProductId": t.ProductID,
		"productId": t.ProductID, "autoRenewStatus": renew, "environment": a.Environment, "signedDate": s.Signed.UnixMilli()}
	if !s.GraceUntil.IsZero() {
		info["gracePeriodExpiresDate"] = s.GraceUntil.UnixMilli()
	}
	renewal, err := a.Chain.Sign(info)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.statuses[t.OriginalTransactionID] = status{code: s.Code, transaction: tx, renewal: renewal}
	return nil
}

// Refusals say why each refused token was, in order.
func (a *API) Refusals() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.refusals)
}

// Handler serves the App Store Server API's routes the stand-in knows.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /inApps/v1/notifications/history", a.notificationHistory)
	mux.HandleFunc("GET /inApps/v1/subscriptions/{id}", a.subscriptionStatuses)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := a.checkToken(r); err != nil {
			a.mu.Lock()
			a.refusals = append(a.refusals, err.Error())
			a.mu.Unlock()
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// checkToken checks the request token as Apple does: ES256 signed by the key, its kid,
// typ JWT, iss, aud appstoreconnect-v1, bid, and an exp at most 60 minutes after iat.
func (a *API) checkToken(r *http.Request) error {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return fmt.Errorf("no bearer token")
	}
	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return &a.key.PublicKey, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithAudience("appstoreconnect-v1"), jwt.WithIssuer(a.IssuerID),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	if err != nil {
		return err
	}
	iat, _ := claims.GetIssuedAt()
	exp, _ := claims.GetExpirationTime()
	switch {
	case tok.Header["kid"] != a.KeyID:
		return fmt.Errorf("kid %v, want %s", tok.Header["kid"], a.KeyID)
	case tok.Header["typ"] != "JWT":
		return fmt.Errorf("typ %v, want JWT", tok.Header["typ"])
	case claims["bid"] != a.BundleID:
		return fmt.Errorf("bid %v, want %s", claims["bid"], a.BundleID)
	case iat == nil || exp.Sub(iat.Time) > time.Hour:
		return fmt.Errorf("exp more than 60 minutes after iat")
	}
	return nil
}

// historyKept is how far back Apple keeps the notification history, by environment.
var historyKept = map[string]time.Duration{"Production": 180 * 24 * time.Hour, "Sandbox": 30 * 24 * time.Hour}

// notificationHistory is Get Notification History: every notification sent, in pages of
// 20 with a paginationToken (the index of the page's first item, here). The stand-in
// keeps no send times, so startDate and endDate select by each notification's signedDate.
// It refuses dates as Apple does, measured when the request arrives.
func (a *API) notificationHistory(w http.ResponseWriter, r *http.Request) {
	var q struct {
		StartDate int64 `json:"startDate"`
		EndDate   int64 `json:"endDate"`
	}
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errorCode": 4000006, "errorMessage": "Invalid request."})
		return
	}
	if code, msg := a.checkDates(q.StartDate, q.EndDate); code != 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errorCode": code, "errorMessage": msg})
		return
	}
	from, _ := strconv.Atoi(r.URL.Query().Get("paginationToken"))
	a.mu.Lock()
	var selected []string
	for _, h := range a.history {
		if h.signed >= q.StartDate && h.signed <= q.EndDate {
			selected = append(selected, h.payload)
		}
	}
	a.mu.Unlock()
	page := map[string]any{"hasMore": false, "notificationHistory": []any{}}
	var items []any
	for i := from; i < len(selected) && i < from+historyPage; i++ {
		items = append(items, map[string]any{"signedPayload": selected[i], "sendAttempts": []any{}})
	}
	if items != nil {
		page["notificationHistory"] = items
	}
	if from+historyPage < len(selected) {
		page["hasMore"], page["paginationToken"] = true, strconv.Itoa(from+historyPage)
	}
	writeJSON(w, http.StatusOK, page)
}

// checkDates is Apple's refusal of a history's dates (its errorCode and message), or 0.
func (a *API) checkDates(start, end int64) (int64, string) {
	now := a.Clock()
	kept, ok := historyKept[a.Environment]
	if !ok {
		kept = historyKept["Sandbox"]
	}
	switch {
	case start <= 0 || start > now.UnixMilli():
		return 4000015, "Invalid start date."
	case end <= 0:
		return 4000016, "Invalid end date."
	case start > end:
		return 4000013, "Start date after end date."
	case start < now.Add(-kept).UnixMilli():
		return 4000012, "Start date too far in the past."
	}
	return 0, ""
}

// subscriptionStatuses is Get All Subscription Statuses for one original transaction.
func (a *API) subscriptionStatuses(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	a.mu.Lock()
	s, ok := a.statuses[id]
	a.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"errorCode": 4040010, "errorMessage": "Transaction id not found."})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"environment": a.Environment, "bundleId": a.BundleID, "appAppleId": 1234567890,
		"data": []any{map[string]any{"subscriptionGroupIdentifier": "21000001", "lastTransactions": []any{map[string]any{
			"status": s.code, "originalTransactionId": id, "signedTransactionInfo": s.transaction, "signedRenewalInfo": s.renewal,
		}}}}})
}

// signedDate is a signed payload's signedDate, read without verifying (the stand-in
// signed it, or a test forged it on purpose).
func signedDate(signedPayload string) int64 {
	parts := strings.Split(signedPayload, ".")
	if len(parts) != 3 {
		return 0
	}
	var p struct {
		SignedDate int64 `json:"signedDate"`
	}
	if raw, err := jwt.NewParser().DecodeSegment(parts[1]); err == nil {
		json.Unmarshal(raw, &p)
	}
	return p.SignedDate
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
