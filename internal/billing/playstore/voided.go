package playstore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/api/androidpublisher/v3"
	"google.golang.org/api/googleapi"

	"github.com/tollgate/tollgate/internal/billing"
)

// VoidedKept is how far back Google keeps voided purchases: a read never starts earlier.
const VoidedKept = 30 * 24 * time.Hour

// voidID is the event id of a voided purchase: one per order.
func voidID(orderID string) string { return "void:" + orderID }

// VoidedPurchases reads the page of purchases.voidedpurchases.list that page names ("" for
// the first) of the purchases voided between start and end, subscriptions included. Each
// void is an event of its own, keyed by its order (void:<orderId>), as its push is: a void
// pushed and lost is applied as if delivered, one that arrived is not applied twice.
func (a *Adapter) VoidedPurchases(ctx context.Context, start, end time.Time, page string) (billing.HistoryPage, error) {
	call := a.api.service.Purchases.Voidedpurchases.List(a.cfg.PackageName).Type(1).
		StartTime(start.UnixMilli()).EndTime(end.UnixMilli()).MaxResults(1000).Context(ctx)
	if page != "" {
		call = call.Token(page)
	}
	list, err := call.Do()
	if err != nil {
		return billing.HistoryPage{}, voidedError(err)
	}
	var h billing.HistoryPage
	for _, v := range list.VoidedPurchases {
		if v.OrderId == "" || v.PurchaseToken == "" || v.VoidedTimeMillis <= 0 {
			h.Refused = append(h.Refused, errVoidIncomplete)
			continue
		}
		body, err := a.voidBody(v)
		if err != nil {
			return billing.HistoryPage{}, err
		}
		h.Events = append(h.Events, billing.HistoryEvent{ID: voidID(v.OrderId), At: time.UnixMilli(v.VoidedTimeMillis).UTC(), Body: body})
	}
	if list.TokenPagination != nil {
		h.Next = list.TokenPagination.NextPageToken
	}
	return h, nil
}

var errVoidIncomplete = billing.Invalidf("a voided purchase without its orderId, purchaseToken or voidedTimeMillis")

// voidBody is a void as the push of its voidedPurchaseNotification would carry it, so that
// it is stored, shown and replayed as one.
func (a *Adapter) voidBody(v *androidpublisher.VoidedPurchase) ([]byte, error) {
	n, err := json.Marshal(map[string]any{
		"version": "1.0", "packageName": a.cfg.PackageName, "eventTimeMillis": strconv.FormatInt(v.VoidedTimeMillis, 10),
		"voidedPurchaseNotification": map[string]any{"purchaseToken": v.PurchaseToken, "orderId": v.OrderId},
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"message": map[string]any{
		"data": base64.StdEncoding.EncodeToString(n), "messageId": voidID(v.OrderId),
	}})
}

// voidedError reads the list's refusal: a 400 about startTime is a start older than the
// 30 days Google keeps (billing.ErrHistoryStartTooOld).
func voidedError(err error) error {
	var apiErr *googleapi.Error
	if errors.As(err, &apiErr) && apiErr.Code == http.StatusBadRequest && strings.Contains(strings.ToLower(apiErr.Message), "starttime") {
		return fmt.Errorf("%w: %v", billing.ErrHistoryStartTooOld, err)
	}
	return readAs(err)
}
