package stripe

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

const testSecret = "whsec_test_secret"

func addFixtureSeeds(f *testing.F, dir string) {
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", dir, "*.json"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func validStatus(s string) bool {
	switch s {
	case billing.StatusActive, billing.StatusTrialing, billing.StatusPastDue, billing.StatusCancelled, billing.StatusExpired, billing.StatusRefunded:
		return true
	}
	return false
}

func FuzzParseWebSignature(f *testing.F) {
	for _, seed := range []string{
		"t=1790000000,v1=" + strings.Repeat("ab", 32),
		"t=1790000000,v1=" + strings.Repeat("ab", 32) + ",v1=00,v0=zz",
		"t=,v1=", "t=1,t=2", "v1=", ",,,", "t=-5,v1=" + strings.Repeat("0", 64), "t=99999999999999999999,v1=x",
	} {
		f.Add(seed)
	}
	now := time.Unix(1790000000, 0)
	body := []byte(`{"id":"evt"}`)
	f.Fuzz(func(t *testing.T, header string) {
		sig, err := parseSignature(header)
		if err == nil && (sig.timestamp <= 0 || len(sig.v1) == 0) {
			t.Fatalf("accepted %q without a timestamp or a v1", header)
		}
		for _, mac := range sig.v1 {
			if len(mac) != 32 {
				t.Fatalf("v1 of %d bytes accepted", len(mac))
			}
		}
		// Nothing but the real signature may verify.
		if verifySignature(testSecret, header, body, now) == nil &&
			!strings.Contains(header, SignHeader(testSecret, time.Unix(sig.timestamp, 0), body)[len("t=1790000000,"):]) {
			t.Fatalf("forged header %q verified", header)
		}
	})
}

func FuzzDecodeWebEvent(f *testing.F) {
	addFixtureSeeds(f, "web")
	f.Add([]byte(`{"data":{"object":{"id":"s","status":"active","customer":{"id":5}}}}`))
	f.Add([]byte(`{"data":{"object":{"id":"s","status":"canceled","items":{"data":[{"current_period_end":-1}]}}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var ev webEvent
		if json.Unmarshal(body, &ev) != nil {
			return
		}
		at := time.Unix(ev.Created, 0)
		if sub, err := decodeWebSubscription(ev.Data.Object); err == nil {
			if sub.ID == "" || sub.Status == "" {
				t.Fatalf("decoded a subscription without id or status: %+v", sub)
			}
			status, horizon, err := canonical(sub, at, nil, nil)
			again, horizonAgain, errAgain := canonical(sub, at, nil, nil)
			if status != again || !reflect.DeepEqual(horizon, horizonAgain) || (err == nil) != (errAgain == nil) {
				t.Fatal("canonical is not a function of its inputs")
			}
			if err == nil && (!validStatus(status) || (status == billing.StatusExpired && horizon == nil)) {
				t.Fatalf("status %q with horizon %v", status, horizon)
			}
			for _, id := range sub.priceIDs() {
				if id == "" {
					t.Fatal("an empty price id")
				}
			}
			if end := sub.periodEnd(); end != nil && end.Unix() <= 0 {
				t.Fatalf("period end %v", end)
			}
		}
		if inv, err := decodeWebInvoice(ev.Data.Object); err == nil {
			if paid := inv.paidThrough(); paid != nil && paid.Unix() <= 0 {
				t.Fatalf("paid through %v", paid)
			}
			for _, id := range inv.priceIDs() {
				if id == "" {
					t.Fatal("an empty invoice price id")
				}
			}
			if inv.subscriptionID() != inv.subscriptionID() || inv.userID() != inv.userID() {
				t.Fatal("invoice fields are not stable")
			}
		}
		if attributesAgree(ev.Data.PreviousAttributes, ev.Data.Object) != attributesAgree(ev.Data.PreviousAttributes, ev.Data.Object) {
			t.Fatal("attributesAgree is not stable")
		}
	})
}

// FuzzWebEventReadOnce: reading a web body once (decodeWebEvent) gives the envelope the
// general path (decodeTop, webEnvelope) gives, or its error, and the event the processor
// would decode; where it declines, the general path takes over.
func FuzzWebEventReadOnce(f *testing.F) {
	addFixtureSeeds(f, "web")
	f.Add([]byte(`{"id":"evt_1","type":5,"created":"x","data":{"object":{"id":"s"}}}`))
	f.Add([]byte(`{"id":null,"type":"customer.subscription.updated"}`))
	f.Add([]byte(`{"id":"evt_1","data":5}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"ID":"evt_1","id":"evt_2","Type":"a"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		env, ev, err := decodeWebEvent(body)
		if ev == nil && err == nil {
			return // the general path reads it
		}
		top, topErr := billing.DecodeTop(body)
		if topErr != nil {
			t.Fatalf("read once, but the general path finds no object: %v", topErr)
		}
		for key := range top {
			for _, field := range []string{"id", "type", "created", "data"} {
				if key != field && strings.EqualFold(key, field) {
					return // the one reading matches keys as the processor does, ignoring case
				}
			}
		}
		want, wantErr := envelope(top)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("envelope error %v, the general path's %v", err, wantErr)
		}
		if err != nil {
			return
		}
		if env.ID != want.ID || env.Type != want.Type {
			t.Fatalf("envelope %+v, the general path's %+v", env, want)
		}
		var general webEvent
		if json.Unmarshal(body, &general) != nil {
			t.Fatalf("read once, but the processor's decode fails")
		}
		if !reflect.DeepEqual(*ev, general) {
			t.Fatalf("event %+v, the processor's %+v", *ev, general)
		}
	})
}
