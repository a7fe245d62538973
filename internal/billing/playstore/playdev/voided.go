package playdev

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"google.golang.org/api/androidpublisher/v3"
)

// Void records a voided purchase, as purchases.voidedpurchases.list will list it.
func (g *Google) Void(v androidpublisher.VoidedPurchase) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.voided = append(g.voided, &v)
	g.changed()
}

// voidedKept is how far back Google keeps voided purchases.
const voidedKept = 30 * 24 * time.Hour

// voidedPage is how many voided purchases one page holds (Google's default is 1000; a
// small page makes paging happen in tests).
const voidedPage = 2

// voidedPurchases is purchases.voidedpurchases.list: the purchases voided between
// startTime and endTime (milliseconds), by voidedTimeMillis, paged by token.
// Google keeps 30 days of voided purchases: a startTime older than that is refused (a page
// token's request ignores startTime, as Google's does).
func (g *Google) voidedPurchases(w http.ResponseWriter, r *http.Request) {
	if !g.authorized(w, r) {
		return
	}
	q := r.URL.Query()
	start, _ := strconv.ParseInt(q.Get("startTime"), 10, 64)
	if q.Get("token") == "" && start < g.Clock().Add(-voidedKept).UnixMilli() {
		apiError(w, http.StatusBadRequest, "The startTime cannot be older than 30 days.")
		return
	}
	end, err := strconv.ParseInt(q.Get("endTime"), 10, 64)
	if err != nil {
		end = 1 << 62
	}
	from, _ := strconv.Atoi(q.Get("token"))
	g.mu.Lock()
	var in []*androidpublisher.VoidedPurchase
	for _, v := range g.voided {
		if v.VoidedTimeMillis >= start && v.VoidedTimeMillis <= end {
			in = append(in, v)
		}
	}
	g.mu.Unlock()
	slices.SortStableFunc(in, func(a, b *androidpublisher.VoidedPurchase) int { return int(a.VoidedTimeMillis - b.VoidedTimeMillis) })
	list := androidpublisher.VoidedPurchasesListResponse{}
	if from < len(in) {
		to := min(from+voidedPage, len(in))
		list.VoidedPurchases = in[from:to]
		if to < len(in) {
			list.TokenPagination = &androidpublisher.TokenPagination{NextPageToken: strconv.Itoa(to)}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(list)
}
