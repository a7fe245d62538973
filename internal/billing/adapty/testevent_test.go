package adapty

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

func TestMoveToNow(t *testing.T) {
	now := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	body, _ := os.ReadFile("../testdata/mobile/subscription_started.json")
	moved, err := MoveToNow(body, now)
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

}
