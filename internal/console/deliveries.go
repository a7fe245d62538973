package console

import (
	"net/http"
	"strconv"

	"github.com/tollgate/tollgate/internal/outbound"
)

type deliveriesData struct {
	Failed, Pending []outbound.Delivery
}

// deliveries is GET /admin/deliveries: the outbound deliveries that are not delivered,
// failed first, with their attempts and last error.
func (c *Console) deliveries(w http.ResponseWriter, r *http.Request) {
	var data deliveriesData
	var err error
	if data.Failed, err = outbound.List(r.Context(), c.opts.DB, outbound.Filter{Status: outbound.Failed, Limit: pageSize}); err != nil {
		c.fail(w, r, err)
		return
	}
	if data.Pending, err = outbound.List(r.Context(), c.opts.DB, outbound.Filter{Status: outbound.Pending, Limit: pageSize}); err != nil {
		c.fail(w, r, err)
		return
	}
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
	c.audit(r.Context(), "retry delivery", r.PathValue("id"), result)
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
