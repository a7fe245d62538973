package devidentity

import "net/http"

// Handler serves the service's part of the GoTrue API under Path.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Path+"/.well-known/jwks.json", s.jwks)
	mux.HandleFunc("POST "+Path+"/token", s.token)
	mux.HandleFunc("POST "+Path+"/signup", s.signup)
	mux.HandleFunc("POST "+Path+"/recover", s.recover)
	mux.HandleFunc("POST "+Path+"/otp", s.otp)
	mux.HandleFunc("POST "+Path+"/verify", s.verifyCode)
	mux.HandleFunc("GET "+Path+"/verify", s.verifyLink)
	mux.HandleFunc("GET "+Path+"/user", s.getUser)
	mux.HandleFunc("PUT "+Path+"/user", s.putUser)
	mux.HandleFunc("POST "+Path+"/logout", s.logout)
	mux.HandleFunc("GET "+Path+"/authorize", s.authorize)
	mux.HandleFunc(Path+"/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "not_found", "The development identity service has no such endpoint.")
	})
	return mux
}
