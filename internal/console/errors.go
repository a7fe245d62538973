package console

import (
	"context"
	"database/sql"
	"errors"
	"net/http"

	"github.com/tollgate/tollgate/internal/billing"
)

// Errors a console page answers with something other than a failure.
var (
	errNoSuchThing = errors.New("not found")
	errBadInput    = errors.New("bad input")
)

// fail is the console's one error-to-page mapper: nothing there (billing's not-found
// answers too) is 404, a bad filter 400,
// the database out of time 503, anything else 500. The error itself goes to the
// log, never to the page.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, errNoSuchThing), errors.Is(err, sql.ErrNoRows), billing.KindOf(err) == billing.KindNotFound:
		c.render(w, r, http.StatusNotFound, "message", page{Title: "Not found", Alert: "There is nothing at this address."})
	case errors.Is(err, errBadInput):
		c.render(w, r, http.StatusBadRequest, "message", page{Title: "Not understood", Alert: "The request's filters could not be read."})
	case errors.Is(err, context.DeadlineExceeded):
		w.Header().Set("Retry-After", "5")
		c.render(w, r, http.StatusServiceUnavailable, "message", page{Title: "Unavailable", Alert: "The database is not answering. Please try again in a moment."})
	default:
		c.opts.Log.ErrorContext(r.Context(), "console request failed", "path", r.URL.Path, "error", err)
		c.render(w, r, http.StatusInternalServerError, "message", page{Title: "Something went wrong", Alert: "Something went wrong on our side; it is in the server's log."})
	}
}
