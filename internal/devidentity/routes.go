package devidentity

import "net/http"

// Handler serves the service's part of the GoTrue API under its base URL's path.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+s.path+"/.well-known/jwks.json", s.jwks)
	mux.HandleFunc("POST "+s.path+"/token", s.token)
	mux.HandleFunc("POST "+s.path+"/signup", s.signup)
	mux.HandleFunc("POST "+s.path+"/recover", s.recover)
	mux.HandleFunc("POST "+s.path+"/otp", s.otp)
	mux.HandleFunc("POST "+s.path+"/verify", s.verifyCode)
	mux.HandleFunc("GET "+s.path+"/verify", s.verifyLink)
	mux.HandleFunc("GET "+s.path+"/user", s.getUser)
	mux.HandleFunc("PUT "+s.path+"/user", s.putUser)
	mux.HandleFunc("POST "+s.path+"/logout", s.logout)
	mux.HandleFunc("GET "+s.path+"/authorize", s.authorize)
	mux.HandleFunc(s.path+"/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "not_found", "The development identity service has no such endpoint.")
	})
	return mux
}
