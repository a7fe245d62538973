package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/tollgate/tollgate/internal/knownusers"
	"github.com/tollgate/tollgate/internal/servicekeys"
)

type credentialKey struct{}

// credential is the request's bearer token, read once at the front of the chain: the
// per-token throttle and the verifier both key on the token itself.
type credential struct {
	token     string
	sent      bool   // a bearer credential was presented, well-formed or not
	ambiguous bool   // several Authorization headers: none is believed
	user      User   // set once a user token is verified
	userJSON  []byte // user, encoded; shared with the token cache, never changed
	service   string // the service key's name, once checked
}

func credentialOf(ctx context.Context) *credential {
	c, _ := ctx.Value(credentialKey{}).(*credential)
	return c
}

// CurrentUser is the verified user of an /api request. Handlers behind Authenticate can
// rely on ok being true.
func CurrentUser(ctx context.Context) (User, bool) {
	c := credentialOf(ctx)
	if c == nil || c.user.ID == "" {
		return User{}, false
	}
	return c.user, true
}

// readCredential parses the Authorization header into the request's credential.
func readCredential(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &credential{}
		if values := r.Header.Values("Authorization"); len(values) > 1 {
			// Which one a proxy or an attacker added cannot be told: refuse them all.
			c.sent, c.ambiguous = true, true
		} else {
			c.token, c.sent = bearerToken(r.Header.Get("Authorization"))
		}
		if len(c.token) > MaxTokenBytes {
			c.token = "" // refused unread
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), credentialKey{}, c)))
	})
}

// tokenKey is the per-token throttle's key: the raw token, never its unverified claims.
// The throttle's counters keep only a hash of it.
func tokenKey(r *http.Request) (string, bool) {
	c := credentialOf(r.Context())
	if c == nil || c.token == "" {
		return "", false
	}
	return c.token, true
}

// Authenticate admits only requests with a valid bearer credential, a user token or a
// service key; nothing else reaches next. It runs behind readCredential. Which kind an
// operation admits is decided per operation (admitCredential). A verified user is told to
// users (nil: nobody), which records each session's user once.
func Authenticate(v *Verifier, keys *servicekeys.Keys, log *slog.Logger, users *knownusers.Recorder) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c := credentialOf(r.Context())
			switch {
			case c != nil && c.ambiguous:
				writeError(w, errSeveralAuth)
				return
			case c != nil && c.sent && c.token == "":
				writeError(w, errBadToken)
				return
			case c == nil || c.token == "":
				writeError(w, errNoToken)
				return
			}
			if strings.HasPrefix(c.token, servicekeys.Prefix) {
				name, err := checkServiceKey(r.Context(), keys, c.token)
				if err != nil {
					writeError(w, err)
					return
				}
				c.service = name
				next.ServeHTTP(w, r)
				return
			}
			found, err := v.verify(r.Context(), c.token)
			switch {
			case errors.Is(err, ErrNoKeySet):
				log.WarnContext(r.Context(), "token not judged: no key set loaded")
				writeError(w, err)
				return
			case err != nil:
				writeError(w, errBadToken)
				return
			}
			c.user, c.userJSON = found.user, found.encoded
			users.Saw(c.user.SessionID, c.user.ID, c.user.Email)
			next.ServeHTTP(w, r)
		})
	}
}

// bearerToken extracts the token of "Bearer <token>" (scheme in any case). sent reports
// whether the header carried a bearer credential at all, well-formed or not.
func bearerToken(header string) (token string, sent bool) {
	if strings.EqualFold(header, "bearer") {
		return "", true
	}
	scheme, rest, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(rest)
	if token == "" || strings.IndexByte(token, ' ') >= 0 || strings.IndexByte(token, '\t') >= 0 {
		return "", true
	}
	return token, true
}

// checkServiceKey is the key's name, errBadToken for a key that is unknown or revoked, or
// the database's failure.
func checkServiceKey(ctx context.Context, keys *servicekeys.Keys, token string) (string, error) {
	if keys == nil {
		return "", errBadToken
	}
	name, err := keys.Check(ctx, token)
	if errors.Is(err, servicekeys.ErrUnknown) {
		return "", errBadToken
	}
	return name, err
}

// admitCredential lets an operation run only for the credential kind its security names:
// user tokens on user operations, service keys on service operations; the other kind is
// authenticated but not allowed, 403.
func (a *API) admitCredential(ctx huma.Context, next func(huma.Context)) {
	kind, refusal := schemeUser, errServiceOnly
	if c := credentialOf(ctx.Context()); c != nil && c.service != "" {
		kind, refusal = schemeService, errUserOnly
	}
	security := ctx.Operation().Security
	if len(security) == 0 {
		security = forUsers // the API's default, for operations that name none
	}
	for _, requirement := range security {
		if _, ok := requirement[kind]; ok {
			next(ctx)
			return
		}
	}
	_, w := humago.Unwrap(ctx)
	writeError(w, refusal)
}
