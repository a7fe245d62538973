package stripe

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

func TestMoveToNow(t *testing.T) {
	now := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)

	body, _ := os.ReadFile("../testdata/web/customer.subscription.updated.json")
	moved, err := MoveToNow(body, now)
	if err != nil {
		t.Fatal(err)
	}
	var before, after webEvent
	json.Unmarshal(body, &before)
	json.Unmarshal(moved, &after)
	if after.Created != now.Unix() || after.ID == before.ID {
		t.Fatalf("web event created %d id %s, want %d and a new id", after.Created, after.ID, now.Unix())
	}
	var subBefore, subAfter subscription
	json.Unmarshal(before.Data.Object, &subBefore)
	json.Unmarshal(after.Data.Object, &subAfter)
	endBefore, endAfter := subBefore.periodEnd(), subAfter.periodEnd()
	if endBefore == nil || endAfter == nil || endAfter.Sub(*endBefore) != now.Sub(time.Unix(before.Created, 0)) {
		t.Fatalf("period end moved from %v to %v, want the event's shift", endBefore, endAfter)
	}
	if !endAfter.After(now) {
		t.Fatalf("the moved period ends %v, before now", endAfter)
	}

	if _, err := MoveToNow([]byte(`{"id":"evt_1"}`), now); err == nil {
		t.Fatal("a web event without created was moved")
	}
}
