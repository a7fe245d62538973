package webhooks_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// minimalReceiver is the baseline ingestion is measured against: the least a correct
// receiver of web subscription webhooks does, written here on its own. It checks the
// signature and its age, parses the JSON once, and in one transaction upserts the event
// (its payload as jsonb on Postgres) and the subscription it carries. It knows no plans,
// users, ordering, replays or outages.
type minimalReceiver struct {
	db     *db.DB
	secret string
	clock  func() time.Time
}

func newMinimalReceiver(tb testing.TB, d *db.DB, secret string, clock func() time.Time) *minimalReceiver {
	tb.Helper()
	payload, timestamp := "jsonb", "timestamptz"
	if d.Engine == db.SQLite {
		payload, timestamp = "text", "timestamp"
	}
	for _, ddl := range []string{
		"create table minimal_events (id text primary key, type text not null, payload " + payload + " not null, received_at " + timestamp + " not null)",
		"create table minimal_subscriptions (id text primary key, customer text not null, status text not null, price text not null, period_end " + timestamp + ", updated_at " + timestamp + " not null)",
	} {
		if _, err := d.Exec(ddl); err != nil {
			tb.Fatal(err)
		}
	}
	return &minimalReceiver{db: d, secret: secret, clock: clock}
}

func (m *minimalReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "unreadable", http.StatusBadRequest)
		return
	}
	if !m.signed(r.Header.Get("Web-Signature"), body) {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var ev struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			Object struct {
				ID       string `json:"id"`
				Customer string `json:"customer"`
				Status   string `json:"status"`
				Items    struct {
					Data []struct {
						CurrentPeriodEnd int64 `json:"current_period_end"`
						Price            struct {
							ID string `json:"id"`
						} `json:"price"`
					} `json:"data"`
				} `json:"items"`
			} `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" || len(ev.Data.Object.Items.Data) == 0 {
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	sub, item, now := ev.Data.Object, ev.Data.Object.Items.Data[0], m.clock()
	periodEnd := sql.NullTime{Time: time.Unix(item.CurrentPeriodEnd, 0).UTC(), Valid: item.CurrentPeriodEnd > 0}
	err = m.db.InTx(r.Context(), func(tx *sql.Tx) error {
		if _, err := tx.Exec("insert into minimal_events (id, type, payload, received_at) values ($1, $2, $3, $4) on conflict (id) do nothing",
			ev.ID, ev.Type, body, now); err != nil {
			return err
		}
		_, err := tx.Exec(`insert into minimal_subscriptions (id, customer, status, price, period_end, updated_at) values ($1, $2, $3, $4, $5, $6)
			on conflict (id) do update set customer = excluded.customer, status = excluded.status, price = excluded.price,
			period_end = excluded.period_end, updated_at = excluded.updated_at`,
			sub.ID, sub.Customer, sub.Status, item.Price.ID, periodEnd, now)
		return err
	})
	if err != nil {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"received":true}`+"\n")
}

// signed checks a "t=…,v1=…" header: an HMAC-SHA256 of "t.body" under the secret, made
// within five minutes of now.
func (m *minimalReceiver) signed(header string, body []byte) bool {
	var t int64
	var macs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		key, value, _ := strings.Cut(part, "=")
		switch key {
		case "t":
			t, _ = strconv.ParseInt(value, 10, 64)
		case "v1":
			if mac, err := hex.DecodeString(value); err == nil {
				macs = append(macs, mac)
			}
		}
	}
	if age := m.clock().Unix() - t; age > 300 || age < -300 {
		return false
	}
	h := hmac.New(sha256.New, []byte(m.secret))
	h.Write([]byte(strconv.FormatInt(t, 10) + "."))
	h.Write(body)
	want := h.Sum(nil)
	for _, mac := range macs {
		if hmac.Equal(mac, want) {
			return true
		}
	}
	return false
}

// TestTheMinimalReceiverStoresWhatItIsSent: the baseline does its work, or the comparison
// would flatter tollgate.
func TestTheMinimalReceiverStoresWhatItIsSent(t *testing.T) {
	h := billingtest.New(t, dbtest.SQLite(t))
	m := newMinimalReceiver(t, h.DB, billingtest.WebSecret, h.Clock)
	body := billingtest.Fixture(t, "web/customer.subscription.updated.json")
	post := func(signature string) int {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "/", strings.NewReader(string(body)))
		req.Header.Set("Web-Signature", signature)
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, req)
		return rec.Code
	}
	if code := post(stripe.SignHeader("another secret", h.Clock(), body)); code != http.StatusUnauthorized {
		t.Errorf("a wrong signature: %d", code)
	}
	if code := post(stripe.SignHeader(billingtest.WebSecret, h.Clock(), body)); code != http.StatusOK {
		t.Fatalf("a signed event: %d", code)
	}
	var events, subscriptions int
	var status string
	h.DB.QueryRow("select count(*) from minimal_events").Scan(&events)
	h.DB.QueryRow("select count(*), max(status) from minimal_subscriptions").Scan(&subscriptions, &status)
	if events != 1 || subscriptions != 1 || status != "active" {
		t.Errorf("stored %d events, %d subscriptions (status %q)", events, subscriptions, status)
	}
}
