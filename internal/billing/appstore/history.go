package appstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// NotificationHistory reads one page (up to 20) of the notifications Apple sent, or tried
// to send, whose sending began between start and end. Each event's Body is what Apple
// would have posted, {"signedPayload": …}, verified as a delivered notification is.
func (c *API) NotificationHistory(ctx context.Context, start, end time.Time, paginationToken string) (billing.HistoryPage, error) {
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
		return billing.HistoryPage{}, err
	}
	var page billing.HistoryPage
	if answer.HasMore {
		if answer.PaginationToken == "" {
			return billing.HistoryPage{}, fmt.Errorf("%w: Apple said hasMore with no paginationToken", billing.ErrHistoryPaging)
		}
		page.Next = answer.PaginationToken
	}
	for _, h := range answer.NotificationHistory {
		item, err := c.historyItem(h.SignedPayload)
		if err != nil {
			page.Refused = append(page.Refused, err)
			continue
		}
		page.Events = append(page.Events, item)
	}
	return page, nil
}

var errOtherEnvironment = errors.New("the notification is of another environment than the API's")

// historyItem verifies one history item exactly as a delivered notification: its chain,
// Apple's markers, the app, its transaction and renewal, and its environment.
func (c *API) historyItem(signedPayload string) (billing.HistoryEvent, error) {
	body, err := json.Marshal(request{SignedPayload: signedPayload})
	if err != nil {
		return billing.HistoryEvent{}, err
	}
	if err := c.adapter.Verify(nil, body, c.cfg.Clock()); err != nil {
		return billing.HistoryEvent{}, fmt.Errorf("a history item refused: %w", err)
	}
	p, err := decode(body)
	if err != nil {
		return billing.HistoryEvent{}, fmt.Errorf("a history item refused: %w", err)
	}
	if _, env := p.notification.bundleAndEnvironment(); env != c.cfg.Environment {
		return billing.HistoryEvent{}, fmt.Errorf("a history item refused: %w", errOtherEnvironment)
	}
	return billing.HistoryEvent{ID: p.notification.NotificationUUID, At: time.UnixMilli(p.notification.SignedDate).UTC(), Body: body}, nil
}
