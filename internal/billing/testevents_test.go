package billing

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

func TestShapeOf(t *testing.T) {
	for file, want := range map[string]string{
		"testdata/web/customer.subscription.updated.json": ProviderWeb,
		"testdata/web/invoice.payment_succeeded.json":     ProviderWeb,
		"testdata/mobile/subscription_started.json":       ProviderMobile,
		"testdata/mobile/subscription_renewed.json":       ProviderMobile,
	} {
		body, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if got := ShapeOf(body); got != want {
			t.Errorf("%s looks like %q, want %q", file, got, want)
		}
	}
	if got := ShapeOf([]byte(`{"hello":"world"}`)); got != "" {
		t.Errorf("an unknown shape is %q", got)
	}
}

func TestMoveToNow(t *testing.T) {
	now := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)

	body, _ := os.ReadFile("testdata/web/customer.subscription.updated.json")
	moved, err := MoveToNow(ProviderWeb, body, now)
	if err != nil {
		t.Fatal(err)
	}
	var before, after webEvent
	json.Unmarshal(body, &before)
	json.Unmarshal(moved, &after)
	if after.Created != now.Unix() || after.ID == before.ID {
		t.Fatalf("web event created %d id %s, want %d and a new id", after.Created, after.ID, now.Unix())
	}
	var subBefore, subAfter webSubscription
	json.Unmarshal(before.Data.Object, &subBefore)
	json.Unmarshal(after.Data.Object, &subAfter)
	endBefore, endAfter := subBefore.periodEnd(), subAfter.periodEnd()
	if endBefore == nil || endAfter == nil || endAfter.Sub(*endBefore) != now.Sub(time.Unix(before.Created, 0)) {
		t.Fatalf("period end moved from %v to %v, want the event's shift", endBefore, endAfter)
	}
	if !endAfter.After(now) {
		t.Fatalf("the moved period ends %v, before now", endAfter)
	}

	body, _ = os.ReadFile("testdata/mobile/subscription_started.json")
	moved, err = MoveToNow(ProviderMobile, body, now)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		At    string `json:"event_datetime"`
		Props struct {
			Expires string `json:"subscription_expires_at"`
		} `json:"event_properties"`
	}
	json.Unmarshal(moved, &m)
	at, _ := time.Parse(adaptyTime, m.At)
	expires, _ := time.Parse(adaptyTime, m.Props.Expires)
	if !at.Equal(now) || !expires.After(now) || expires.Sub(now) > 32*24*time.Hour {
		t.Fatalf("mobile event at %v expiring %v, want now and about a month later", at, expires)
	}

	if _, err := MoveToNow(ProviderWeb, []byte(`{"id":"evt_1"}`), now); err == nil {
		t.Fatal("a web event without created was moved")
	}
}
