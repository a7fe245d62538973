// Package outboundtest is a receiver of tollgate's outbound webhooks for tests: it verifies
// every delivery with the Standard Webhooks library and keeps what it accepted.
package outboundtest

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Secret is a valid OUTBOUND_WEBHOOK_SECRET.
const Secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// Key is the key behind Secret.
func Key() []byte {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(Secret, "whsec_"))
	return key
}

// Delivery is one accepted delivery.
type Delivery struct {
	MessageID string
	Body      []byte
	Event     Event
}

// Event is the parsed body of an entitlements.changed delivery.
type Event struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      struct {
		UserID   string         `json:"user_id"`
		Previous map[string]any `json:"previous"`
		Current  map[string]any `json:"current"`
		Cause    struct {
			Provider        string `json:"provider"`
			ProviderEventID string `json:"provider_event_id"`
			EventType       string `json:"event_type"`
		} `json:"cause"`
	} `json:"data"`
}

// Receiver answers 2xx to each verified delivery, unless told to fail.
type Receiver struct {
	*httptest.Server
	t        testing.TB
	verifier *standardwebhooks.Webhook
	mu       sync.Mutex
	answer   int // the status to answer; 0 means 204
	hang     chan struct{}
	accepted []Delivery
	attempts int
}

// NewReceiver starts a receiver, closed when the test ends.
func NewReceiver(t testing.TB) *Receiver {
	t.Helper()
	verifier, err := standardwebhooks.NewWebhook(Secret)
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{t: t, verifier: verifier}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	r.mu.Lock()
	r.attempts++
	answer, hang := r.answer, r.hang
	r.mu.Unlock()
	if hang != nil {
		// Whatever happens to the sender meanwhile, a held delivery is not accepted: it
		// is the attempt of a receiver that timed out.
		select {
		case <-hang:
			w.WriteHeader(http.StatusGatewayTimeout)
		case <-req.Context().Done():
		}
		return
	}
	if err := r.verifier.Verify(body, req.Header); err != nil {
		r.t.Errorf("delivery %s does not verify: %v", req.Header.Get("webhook-id"), err)
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	if answer != 0 {
		w.WriteHeader(answer)
		return
	}
	d := Delivery{MessageID: req.Header.Get("webhook-id"), Body: body}
	if err := json.Unmarshal(body, &d.Event); err != nil {
		r.t.Errorf("delivery %s: %v", d.MessageID, err)
	}
	r.mu.Lock()
	r.accepted = append(r.accepted, d)
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// Answer makes the receiver answer status to every delivery from now on, as a receiver
// that is down would; 0 restores 204.
func (r *Receiver) Answer(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answer = status
}

// Hang holds every delivery unanswered until release is called, then refuses it (504).
func (r *Receiver) Hang() (release func()) {
	ch := make(chan struct{})
	r.mu.Lock()
	r.hang = ch
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		r.hang = nil
		r.mu.Unlock()
		close(ch)
	}
}

// Accepted is what the receiver accepted so far, in arrival order.
func (r *Receiver) Accepted() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.accepted...)
}

// Attempts counts every request received, accepted or not.
func (r *Receiver) Attempts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts
}
