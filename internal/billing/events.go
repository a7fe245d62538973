package billing

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Providers.
const (
	ProviderWeb    = "web"
	ProviderMobile = "mobile"
)

// maxEventIDLen bounds provider event ids; real ones are far shorter.
const maxEventIDLen = 255

var errNotObject = errors.New("the body is not a JSON object")

// permanentError marks a payload that can never be processed as sent (a missing or
// malformed field). The event is stored with the error and answered 200; replay can
// re-run it once the cause is fixed.
type permanentError struct{ msg string }

func (e permanentError) Error() string { return e.msg }

func permanent(format string, args ...any) error {
	return permanentError{msg: fmt.Sprintf(format, args...)}
}

// unresolvedError is an event that names a customer or a price tollgate cannot map to a
// user or a plan (yet). It changes nothing, is logged at info with the ids, and is completed
// by a replay once the plan or the customer link exists.
type unresolvedError struct {
	what string
	ids  []any // key, value pairs
}

func (e unresolvedError) Error() string {
	var b strings.Builder
	b.WriteString(e.what)
	for i := 0; i+1 < len(e.ids); i += 2 {
		fmt.Fprintf(&b, " %v=%v", e.ids[i], e.ids[i+1])
	}
	return b.String()
}

func unresolved(what string, ids ...any) error { return unresolvedError{what: what, ids: ids} }

// envelope is what the pipeline needs of any event before processing: its id and type.
type envelope struct {
	ID   string
	Type string
}

// decodeTop parses a webhook body into its top-level fields. It rejects anything that is
// not one JSON object.
func decodeTop(body []byte) (map[string]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, errNotObject
	}
	return top, nil
}

// text returns a top-level field as text: a JSON string's value, or a number's literal;
// null, missing and other kinds give "".
func text(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return string(raw)
	}
	return ""
}

// eventID reads an event's id field: a JSON string, not blank, at most maxEventIDLen bytes,
// without control characters or U+FFFD. The body is stored with NUL and lone surrogates
// replaced by U+FFFD (storableJSON), so an id holding one would be rewritten and could
// collide with another event's: it is refused instead, as no provider sends such an id.
// The errors name the field, for the 400 the provider's dashboard shows.
func eventID(top map[string]json.RawMessage, field string) (string, error) {
	raw, ok := top[field]
	if !ok {
		return "", fmt.Errorf("the event has no %q", field)
	}
	var id string
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) || json.Unmarshal(raw, &id) != nil {
		return "", fmt.Errorf("the event's %q is not a JSON string", field)
	}
	switch {
	case strings.TrimSpace(id) == "":
		return "", fmt.Errorf("the event's %q is empty", field)
	case len(id) > maxEventIDLen:
		return "", fmt.Errorf("the event's %q is longer than %d bytes", field, maxEventIDLen)
	case strings.ContainsFunc(id, func(r rune) bool { return unicode.IsControl(r) || r == utf8.RuneError }):
		return "", fmt.Errorf("the event's %q holds a control character or an invalid one", field)
	}
	return id, nil
}

// webEnvelope derives the id and type of a web event: its top-level id and type.
func webEnvelope(top map[string]json.RawMessage) (envelope, error) {
	id, err := eventID(top, "id")
	return envelope{ID: id, Type: text(top["type"])}, err
}

// mobileEnvelope derives the id and type of a mobile event. Real mobile payloads carry no
// event_id, so when it is absent (or null) the id is synthesised from fields that are fixed
// for one event and that every redelivery repeats (docs/providers.md). An event_id
// that is present must be a proper id.
func mobileEnvelope(top map[string]json.RawMessage) (envelope, error) {
	env := envelope{Type: text(top["event_type"])}
	if raw, ok := top["event_id"]; !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		env.ID = syntheticMobileID(top)
		return env, nil
	}
	var err error
	env.ID, err = eventID(top, "event_id")
	return env, err
}

func syntheticMobileID(top map[string]json.RawMessage) string {
	transactionID := text(top["transaction_id"])
	if transactionID == "" {
		var props map[string]json.RawMessage
		if json.Unmarshal(top["event_properties"], &props) == nil {
			transactionID = text(props["transaction_id"])
		}
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{
		text(top["event_type"]), text(top["event_datetime"]), text(top["profile_id"]), transactionID,
	}, "|")))
	return "mobile_synth_" + hex.EncodeToString(sum[:])[:32]
}

// decodeWebEvent reads a web body in one pass into its envelope and its event, so that the
// processor does not parse it again. The envelope is checked as webEnvelope checks it from
// decodeTop. A nil event says the body needs the general path: decodeTop to say what is
// wrong with it, or a store-then-refuse by the processor (a field of the wrong kind). Keys
// match as the processor has always matched them, ignoring case: a body whose id is keyed
// "ID" is read so, where the general path refused it for want of an "id".
func decodeWebEvent(body []byte) (envelope, *webEvent, error) {
	if b := bytes.TrimSpace(body); len(b) == 0 || b[0] != '{' {
		return envelope{}, nil, nil
	}
	var wire struct {
		ID      json.RawMessage `json:"id"`
		Type    json.RawMessage `json:"type"`
		Created json.RawMessage `json:"created"`
		Data    webEventData    `json:"data"`
	}
	if json.Unmarshal(body, &wire) != nil {
		return envelope{}, nil, nil
	}
	top := map[string]json.RawMessage{}
	if wire.ID != nil {
		top["id"] = wire.ID
	}
	if wire.Type != nil {
		top["type"] = wire.Type
	}
	env, err := webEnvelope(top)
	if err != nil {
		return env, nil, err
	}
	ev := &webEvent{ID: env.ID, Type: env.Type, Data: wire.Data}
	if (wire.Created != nil && json.Unmarshal(wire.Created, &ev.Created) != nil) || !isJSONString(wire.Type) {
		return env, nil, nil
	}
	return env, ev, nil
}

// isJSONString says whether a field is absent, null or a JSON string, as webEvent's Type takes.
func isJSONString(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || raw[0] == '"' || bytes.Equal(raw, []byte("null"))
}

// webEvent is the envelope of a web provider event.
type webEvent struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Created int64        `json:"created"`
	Data    webEventData `json:"data"`
}

// webEventData is a web event's data: the object it is about and, for an update, the
// previous values of the attributes that changed.
type webEventData struct {
	Object             json.RawMessage            `json:"object"`
	PreviousAttributes map[string]json.RawMessage `json:"previous_attributes"`
}

// flexID is a reference the web provider sends either as an id string or as the expanded
// object with an "id".
type flexID string

func (f *flexID) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*f = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*f = flexID(s)
		return nil
	}
	var obj struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return errors.New("want an id string or an object with an id")
	}
	*f = flexID(obj.ID)
	return nil
}

// webSubscription holds the fields of a web subscription object tollgate uses. Period
// ends moved from the subscription to its items in API version 2025-03-31; both are read.
type webSubscription struct {
	ID                string         `json:"id"`
	Customer          flexID         `json:"customer"`
	Status            string         `json:"status"`
	CancelAtPeriodEnd bool           `json:"cancel_at_period_end"`
	CancelAt          *int64         `json:"cancel_at"`
	CanceledAt        *int64         `json:"canceled_at"`
	EndedAt           *int64         `json:"ended_at"`
	TrialEnd          *int64         `json:"trial_end"`
	StartDate         int64          `json:"start_date"`
	Created           int64          `json:"created"`
	CurrentPeriodEnd  *int64         `json:"current_period_end"`
	Metadata          map[string]any `json:"metadata"`
	Items             struct {
		Data []webItem `json:"data"`
	} `json:"items"`
}

// webItem is one item of a web subscription: its price and, in newer API versions, its
// period end.
type webItem struct {
	Price            struct{ ID string } `json:"price"`
	CurrentPeriodEnd *int64              `json:"current_period_end"`
}

func decodeWebSubscription(raw json.RawMessage) (webSubscription, error) {
	var sub webSubscription
	if err := json.Unmarshal(raw, &sub); err != nil {
		return sub, permanent("subscription object: %v", jsonProblem(err))
	}
	if sub.ID == "" {
		return sub, permanent("subscription object has no id")
	}
	if sub.Status == "" {
		return sub, permanent("subscription %s has no status", sub.ID)
	}
	return sub, nil
}

// periodEnd is the latest period end over the items, or the subscription's own (older API).
func (s webSubscription) periodEnd() *time.Time {
	var end int64
	if s.CurrentPeriodEnd != nil {
		end = *s.CurrentPeriodEnd
	}
	for _, item := range s.Items.Data {
		if item.CurrentPeriodEnd != nil && *item.CurrentPeriodEnd > end {
			end = *item.CurrentPeriodEnd
		}
	}
	if end == 0 {
		return nil
	}
	return unixTime(end)
}

func (s webSubscription) userID() string {
	v, _ := s.Metadata["user_id"].(string)
	return v
}

func (s webSubscription) priceIDs() []string {
	var ids []string
	for _, item := range s.Items.Data {
		if item.Price.ID != "" {
			ids = append(ids, item.Price.ID)
		}
	}
	return ids
}

// webInvoice holds the fields of a paid invoice tollgate uses, in both API shapes. The
// subscription's metadata is copied onto the invoice (subscription_details) and its lines.
type webInvoice struct {
	ID                  string             `json:"id"`
	Customer            flexID             `json:"customer"`
	Subscription        flexID             `json:"subscription"`
	SubscriptionDetails webInvoiceMetadata `json:"subscription_details"`
	Parent              struct {
		SubscriptionDetails struct {
			Subscription flexID `json:"subscription"`
			webInvoiceMetadata
		} `json:"subscription_details"`
	} `json:"parent"`
	Lines struct {
		Data []struct {
			Period struct {
				End int64 `json:"end"`
			} `json:"period"`
			Price   struct{ ID string } `json:"price"`
			Pricing struct {
				PriceDetails struct {
					Price flexID `json:"price"`
				} `json:"price_details"`
			} `json:"pricing"`
			webInvoiceMetadata
		} `json:"data"`
	} `json:"lines"`
}

type webInvoiceMetadata struct {
	Metadata map[string]any `json:"metadata"`
}

func (m webInvoiceMetadata) userID() string {
	v, _ := m.Metadata["user_id"].(string)
	return v
}

func decodeWebInvoice(raw json.RawMessage) (webInvoice, error) {
	var inv webInvoice
	if err := json.Unmarshal(raw, &inv); err != nil {
		return inv, permanent("invoice object: %v", jsonProblem(err))
	}
	return inv, nil
}

func (inv webInvoice) subscriptionID() string {
	if id := inv.Parent.SubscriptionDetails.Subscription; id != "" {
		return string(id)
	}
	return string(inv.Subscription)
}

// userID is the identity user id the subscription carried in its metadata, as the
// invoice repeats it.
func (inv webInvoice) userID() string {
	candidates := []string{inv.Parent.SubscriptionDetails.userID(), inv.SubscriptionDetails.userID()}
	for _, line := range inv.Lines.Data {
		candidates = append(candidates, line.userID())
	}
	for _, id := range candidates {
		if id != "" {
			return id
		}
	}
	return ""
}

// priceIDs are the prices the invoice's lines bill, in both API shapes.
func (inv webInvoice) priceIDs() []string {
	var ids []string
	for _, line := range inv.Lines.Data {
		if id := string(line.Pricing.PriceDetails.Price); id != "" {
			ids = append(ids, id)
		} else if line.Price.ID != "" {
			ids = append(ids, line.Price.ID)
		}
	}
	return ids
}

// paidThrough is the latest period end over the invoice's lines.
func (inv webInvoice) paidThrough() *time.Time {
	var end int64
	for _, line := range inv.Lines.Data {
		end = max(end, line.Period.End)
	}
	if end == 0 {
		return nil
	}
	return unixTime(end)
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
		ExpiresAt             string `json:"expires_at"`
		AccessLevelID         string `json:"access_level_id"`
		IsActive              *bool  `json:"is_active"`
		IsRefund              *bool  `json:"is_refund"`
		IsInGracePeriod       *bool  `json:"is_in_grace_period"`
		WillRenew             *bool  `json:"will_renew"`
		IsLifetime            *bool  `json:"is_lifetime"`
	} `json:"event_properties"`
}

func decodeMobileEvent(body []byte) (mobileEvent, time.Time, error) {
	var ev mobileEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return ev, time.Time{}, permanent("mobile event: %v", jsonProblem(err))
	}
	at, err := parseMobileTime(ev.EventDatetime)
	if err != nil {
		return ev, time.Time{}, permanent("event_datetime: %v", err)
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
		return nil, permanent("%s: %v", field, err)
	}
	return &t, nil
}

func unixTime(sec int64) *time.Time {
	t := time.Unix(sec, 0).UTC()
	return &t
}

// jsonProblem describes a decoding error without quoting the input.
func jsonProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fmt.Sprintf("field %q has the wrong type", typeErr.Field)
	}
	return "malformed JSON"
}
