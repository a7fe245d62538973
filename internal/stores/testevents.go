package stores

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/tollgate/tollgate/internal/config"
)

// TestEvents are a store's part in "tollgate webhook send": how its events look, the edits
// --user and --now make, and how a delivery of one is made on this machine.
type TestEvents struct {
	// Shape says what its events are, for a file that holds another store's.
	Shape string
	// LooksLike says whether a JSON object is one of its events.
	LooksLike func(top map[string]json.RawMessage) bool
	// ForUser makes every provider id in body one of userID's own; MoveToNow moves its times
	// so that it happens at now, under a new event id.
	ForUser   func(body []byte, userID string) ([]byte, error)
	MoveToNow func(body []byte, now time.Time) ([]byte, error)
	// New, when set, is an event to send without a file: a new purchase by userID.
	New func(cfg config.Config, userID string) ([]byte, error)
	// Deliver is the delivery of body as the store makes it: the body and the headers to
	// POST.
	Deliver func(ctx context.Context, d Delivery) ([]byte, http.Header, error)
	// NotHeard is what to add to a refusal of a delivery, answered status (404, 401): how to
	// start a server that hears the store as the command sends it ("" when there is
	// nothing to say).
	NotHeard func(cfg config.Config, status int) string
}

// Delivery is one event to deliver.
type Delivery struct {
	Config config.Config
	Body   []byte
	// SignatureHeader is which header a signature goes in, where the store has a choice
	// (the web store: "web" for Web-Signature, "stripe" for Stripe-Signature).
	SignatureHeader string
	// Stderr is told what a person should know of the delivery (a test chain made).
	Stderr io.Writer
}

func jsonHeader() http.Header { return http.Header{"Content-Type": {"application/json"}} }
