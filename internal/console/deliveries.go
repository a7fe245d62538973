package console

import (
	"net/http"
	"strconv"

	"github.com/tollgate/tollgate/internal/outbound"
)

type deliveriesData struct {
	Status     string // failed or pending
	Deliveries []outbound.Delivery
	Page       int
	More       bool
}

// deliveries is GET /admin/deliveries[?status=pending]: the outbound deliveries that are
// not delivered, failed ones unless pending are asked for, newest first, with their
// attempts and last error.
func (c *Console) deliveries(w http.ResponseWriter, r *http.Request) {
	data := deliveriesData{Status: outbound.Failed, Page: pageNumber(r)}
	if r.URL.Query().Get("status") == outbound.Pending {
		data.Status = outbound.Pending
	}
	list, err := outbound.List(r.Context(), c.opts.DB, outbound.Filter{Status: data.Status, Limit: pageSize + 1, Skip: (data.Page - 1) * pageSize})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	data.More = len(list) > pageSize
	data.Deliveries = list[:min(len(list), pageSize)]
	c.render(w, r, http.StatusOK, "deliveries", page{Title: "Deliveries", Section: "deliveries", Data: data})
}

// retry is POST /admin/deliveries/{id}/retry: the same as `tollgate deliveries retry`, with
// an audit line naming the operator.
func (c *Console) retry(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		c.fail(w, r, errNoSuchThing)
		return
	}
	queued, err := outbound.Retry(r.Context(), c.opts.DB, id, c.now())
	result := "queued"
	switch {
	case err != nil:
		result = "failed"
	case !queued:
		result = "not retryable"
	}
	user, _ := outbound.UserOf(r.Context(), c.opts.DB, id) // unknown: recorded without one
	c.audit(r.Context(), "retry delivery", r.PathValue("id"), user, result)
	switch {
	case err != nil:
		c.fail(w, r, err)
	case !queued:
		http.Redirect(w, r, "/admin/deliveries?done=not-retryable", http.StatusSeeOther)
	default:
		if c.opts.Wake != nil {
			c.opts.Wake()
		}
		http.Redirect(w, r, "/admin/deliveries?done=retried", http.StatusSeeOther)
	}
}
