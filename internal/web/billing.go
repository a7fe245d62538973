package web

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/checkout"
	"github.com/tollgate/tollgate/internal/ratelimit"
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
	url, err := w.opts.Checkout.Start(r.Context(), checkout.Buyer{UserID: user.ID, Email: user.Email}, checkout.Request{
		Provider:    r.PostFormValue("provider"),
		Plan:        r.PostFormValue("plan"),
		SuccessPath: w.returnPath() + "?session_id={CHECKOUT_SESSION_ID}",
	})
	w.toProvider(rw, r, url, err)
}

// returnPath is where the provider's checkout sends the buyer back: under the billing
// mount, beside the webhooks.
func (w *Web) returnPath() string { return "/" + w.opts.BillingMount + "/return" }

// waitingChecks bounds the waiting page: a check every waitingEvery seconds, about 30 s
// in all, then it says so and stops — nine requests, within the per-user throttle.
const (
	waitingChecks = 8
	waitingEvery  = 4
)

// perSessionReturn throttles the return page per signed-in browser: each request reads
// the provider's API, which limits tollgate's key as a whole.
var perSessionReturn = ratelimit.Limit{Name: "forms/billing-return", Requests: 10, Window: time.Minute}

// sessionKey keys a throttle on the browser's session, hashed: the cookie is a secret.
func (w *Web) sessionKey(r *http.Request) (string, bool) {
	c, err := r.Cookie(w.sessions.Cookie.Name)
	if err != nil || c.Value == "" {
		return "", false
	}
	sum := sha256.Sum256([]byte(c.Value))
	return hex.EncodeToString(sum[:12]), true
}

// purchaseReturn is GET /billing/return?session_id=: the buyer back from the provider's
// checkout. The purchase is read back from the provider and applied at once, so the
// account page shows the new plan whether or not the webhook has arrived; while the
// provider says the payment is still processing, a page that says so checks again.
func (w *Web) purchaseReturn(rw http.ResponseWriter, r *http.Request) {
	if w.opts.Checkout == nil {
		w.notFound(rw, r)
		return
	}
	user := w.signedIn(rw, r)
	if user == nil {
		return
	}
	session := r.URL.Query().Get("session_id")
	synced, err := w.opts.Checkout.Sync(r.Context(), user.ID, session)
	switch alert := billingAlert(err, "your plan shows here once the payment is confirmed."); {
	case alert != "":
		w.redirect(rw, r, "/", keyAlert, alert)
	case err != nil:
		w.refuse(rw, r, "purchase read-back", "message", page{Title: "Your account"}, err)
	case synced.Pending:
		w.waiting(rw, r, session)
	default:
		w.purchaseApplied(rw, r, user.ID)
	}
}

// purchaseApplied sends the buyer back to the account page saying what was applied, as
// that page shows it: the plan that now entitles them, or, when the read changed nothing
// they can see (a newer event stands, the price is in no plan yet), that the plan shows
// once it is applied — never that a plan is active above a page that shows another.
func (w *Web) purchaseApplied(rw http.ResponseWriter, r *http.Request, userID string) {
	view, err := w.opts.Billing.View(r.Context(), userID)
	if err != nil {
		w.refuse(rw, r, "purchase read-back", "message", page{Title: "Your account"}, err)
		return
	}
	if view.Subscribed && view.Plan != nil {
		w.redirect(rw, r, "/", keyNotice, "Thank you! You are now on "+view.Plan.Name+".")
		return
	}
	w.redirect(rw, r, "/", keyNotice, "Thank you! Your plan here has not changed yet: it changes as soon as the payment provider confirms the purchase.")
}

// waiting is the page shown while the payment is processing: it checks again every few
// seconds (a meta refresh: the pages run no inline script), then stops and says so.
func (w *Web) waiting(rw http.ResponseWriter, r *http.Request, session string) {
	checks, _ := strconv.Atoi(r.URL.Query().Get("checks"))
	if checks >= waitingChecks {
		w.render(rw, r, http.StatusOK, "waiting", page{Title: "Payment processing",
			Notice: "Your payment is still being processed. There is nothing more to do."})
		return
	}
	again := w.returnPath() + "?" + url.Values{"session_id": {session}, "checks": {strconv.Itoa(checks + 1)}}.Encode()
	w.render(rw, r, http.StatusAccepted, "waiting", page{Title: "Payment processing", Refresh: strconv.Itoa(waitingEvery) + ";url=" + again,
		Notice: "Your payment is being processed. This page checks again every few seconds."})
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
	url, err := w.opts.Checkout.Portal(r.Context(), user.ID, r.PostFormValue("provider"))
	w.toProvider(rw, r, url, err)
}

// toProvider sends the browser to a provider's page (303), or back to the account page
// saying why not. The database failing is the unavailable page, as anywhere.
func (w *Web) toProvider(rw http.ResponseWriter, r *http.Request, url string, err error) {
	switch alert := billingAlert(err, "please try again in a moment."); {
	case err == nil:
		http.Redirect(rw, r, url, http.StatusSeeOther)
	case alert != "":
		w.redirect(rw, r, "/", keyAlert, alert)
	default:
		w.refuse(rw, r, "billing session", "message", page{Title: "Your account"}, err)
	}
}

// billingAlert is the forms' one wording of billing's answers, shown on the account page: an
// answer's own detail, or for a provider that failed, that it is not answering and then;
// "" for a failure of the database, which is the unavailable page as anywhere.
func billingAlert(err error, then string) string {
	if e := billing.AsError(err); e != nil {
		return e.Detail
	}
	switch billing.KindOf(err) {
	case "":
		return ""
	case billing.KindProviderFailed:
		return "The payment provider is not answering right now; " + then
	}
	return "That is not available here."
}
