package appstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"
)

// HistoryItem is a notification read from Get Notification History, verified as a
// delivered one is: Body is what Apple would have posted, {"signedPayload": …}.
type HistoryItem struct {
	UUID       string
	SignedDate time.Time
	Body       []byte
}

// HistoryPage is one page of the history (up to 20 notifications). Refused are the items
// that did not verify, with why: they are left out, never applied. Next is the
// paginationToken of the next page, "" on the last.
type HistoryPage struct {
	Items   []HistoryItem
	Refused []error
	Next    string
}

// NotificationHistory reads one page of the notifications Apple sent, or tried to send,
// whose sending began between start and end.
func (c *API) NotificationHistory(ctx context.Context, start, end time.Time, paginationToken string) (HistoryPage, error) {
	path := "/inApps/v1/notifications/history"
	if paginationToken != "" {
		path += "?" + url.Values{"paginationToken": {paginationToken}}.Encode()
	}
	var answer struct {
		NotificationHistory []struct {
			SignedPayload string `json:"signedPayload"`
		} `json:"notificationHistory"`
		HasMore         bool   `json:"hasMore"`
		PaginationToken string `json:"paginationToken"`
	}
	err := c.do(ctx, "POST", path, map[string]int64{"startDate": start.UnixMilli(), "endDate": end.UnixMilli()}, &answer)
	if err != nil {
		return HistoryPage{}, err
	}
	var page HistoryPage
	if answer.HasMore {
		page.Next = answer.PaginationToken
	}
	for _, h := range answer.NotificationHistory {
		item, err := c.historyItem(h.SignedPayload)
		if err != nil {
			page.Refused = append(page.Refused, err)
			continue
		}
		page.Items = append(page.Items, item)
	}
	return page, nil
}

var errOtherEnvironment = errors.New("the notification is of another environment than the API's")

// historyItem verifies one history item exactly as a delivered notification: its chain,
// Apple's markers, the app, its transaction and renewal, and its environment.
func (c *API) historyItem(signedPayload string) (HistoryItem, error) {
	body, err := json.Marshal(request{SignedPayload: signedPayload})
	if err != nil {
		return HistoryItem{}, err
	}
	if err := c.adapter.Verify(nil, body, c.cfg.Clock()); err != nil {
		return HistoryItem{}, fmt.Errorf("a history item refused: %w", err)
	}
	p, err := decode(body)
	if err != nil {
		return HistoryItem{}, fmt.Errorf("a history item refused: %w", err)
	}
	if _, env := p.notification.bundleAndEnvironment(); env != c.cfg.Environment {
		return HistoryItem{}, fmt.Errorf("a history item refused: %w", errOtherEnvironment)
	}
	return HistoryItem{UUID: p.notification.NotificationUUID, SignedDate: time.UnixMilli(p.notification.SignedDate).UTC(), Body: body}, nil
}
