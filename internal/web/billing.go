package web

import (
	"errors"
	"net/http"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/checkout"
)

// startCheckout is the account page's "Upgrade" button: it creates a checkout for the
// plan and sends the browser to the provider's page.
func (w *Web) startCheckout(rw http.ResponseWriter, r *http.Request) {
	if w.opts.Checkout == nil {
		w.notFound(rw, r)
		return
	}
	user := w.signedIn(rw, r)
	if user == nil {
		return
	}
	url, err := w.opts.Checkout.Start(r.Context(), checkout.Buyer{UserID: user.ID, Email: user.Email},
		checkout.Request{Plan: r.PostFormValue("plan")})
	w.toProvider(rw, r, url, err)
}

// openPortal is the account page's "Manage billing" button.
func (w *Web) openPortal(rw http.ResponseWriter, r *http.Request) {
	if w.opts.Checkout == nil {
		w.notFound(rw, r)
		return
	}
	user := w.signedIn(rw, r)
	if user == nil {
		return
	}
	url, err := w.opts.Checkout.Portal(r.Context(), user.ID)
	w.toProvider(rw, r, url, err)
}

// toProvider sends the browser to a provider's page (303), or back to the account page
// saying why not. The database failing is the unavailable page, as anywhere.
func (w *Web) toProvider(rw http.ResponseWriter, r *http.Request, url string, err error) {
	var provider *billing.ProviderError
	switch {
	case err == nil:
		http.Redirect(rw, r, url, http.StatusSeeOther)
	case errors.Is(err, billing.ErrManagedInApp):
		w.redirect(rw, r, "/", keyAlert, billing.ManagedInAppMessage)
	case errors.Is(err, billing.ErrAlreadySubscribed):
		w.redirect(rw, r, "/", keyAlert, "You already have this plan.")
	case errors.As(err, &provider):
		w.redirect(rw, r, "/", keyAlert, "The payment provider is not answering right now. Please try again in a moment.")
	case errors.Is(err, billing.ErrUnknownPlan), errors.Is(err, billing.ErrPlanNotOnWeb), errors.Is(err, billing.ErrNoWebCustomer),
		errors.Is(err, billing.ErrCheckoutUnavailable):
		w.redirect(rw, r, "/", keyAlert, "That is not available here.")
	default:
		w.refuse(rw, r, "billing session", "message", page{Title: "Your account"}, err)
	}
}
