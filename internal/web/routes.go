package web

import "net/http"

// Handler is the forms surface. Middleware, outermost first: security headers, cross-origin
// protection on every state-changing request, _method override, the session, the form
// throttles (per IP and per e-mail, POSTs only), then the routes.
func (w *Web) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", w.account)
	mux.HandleFunc("POST /account/checkout", w.startCheckout)
	mux.HandleFunc("POST /account/portal", w.openPortal)
	mux.Handle("GET "+w.returnPath(), w.opts.Throttles.By(perSessionReturn, w.sessionKey, w.tooManyRequests)(http.HandlerFunc(w.purchaseReturn)))

	mux.HandleFunc("GET /session/new", w.signInForm)
	mux.HandleFunc("POST /session", w.createSession)
	mux.HandleFunc("DELETE /session", w.destroySession)

	mux.HandleFunc("GET /registration/new", w.signUpForm)
	mux.HandleFunc("POST /registration", w.createRegistration)

	mux.HandleFunc("GET /passwords/new", w.resetRequestForm)
	mux.HandleFunc("POST /passwords", w.createResetRequest)
	mux.HandleFunc("GET /passwords/{token}/edit", w.resetForm)
	mux.HandleFunc("PUT /passwords/{token}", w.updatePassword)

	mux.HandleFunc("GET /otp/new", w.otpForm)
	mux.HandleFunc("POST /otp", w.sendOTP)
	mux.HandleFunc("GET /otp/verify", w.otpVerifyForm)
	mux.HandleFunc("POST /otp/verify", w.verifyOTP)

	mux.HandleFunc("GET /oauth/{provider}/authorize", w.oauthAuthorize)
	mux.HandleFunc("GET /oauth/callback", w.oauthCallback)

	mux.HandleFunc("GET /static/brand.css", w.opts.Brand.serveCSS)
	mux.HandleFunc("GET /favicon.ico", w.opts.Brand.serveFavicon)
	mux.Handle("GET /static/", w.staticFiles())
	mux.HandleFunc("/", w.notFound)

	var h http.Handler = mux
	h = postsOnly(w.opts.Throttles.By(w.opts.PerEmail, emailKey, w.tooManyRequests))(h)
	h = postsOnly(w.opts.Throttles.By(w.opts.PerIP, w.opts.Throttles.IPKey, w.tooManyRequests))(h)
	return w.Wrap(recordRoute(mux, h))
}

// Wrap puts h behind what every page of the forms' site has: the security headers
// (no-store, framed by nobody), cross-origin protection on every state-changing request,
// the _method override and the signed-in session, which CurrentUser then reads. The
// operator console is served this way, beside the forms.
func (w *Web) Wrap(h http.Handler) http.Handler {
	h = w.sessions.LoadAndSave(h)
	h = methodOverride(h)
	csrf := http.NewCrossOriginProtection()
	csrf.SetDenyHandler(http.HandlerFunc(w.forbidden))
	h = csrf.Handler(h)
	return securityHeaders(w.opts.Brand.imageSource(), w.opts.CheckoutPages, h)
}
