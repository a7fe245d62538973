package devidentity

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/db"
)

// Service is the development identity service: an Emulator over tollgate's database.
//
// It is not an identity service to deploy. Sign-up is confirmed at once; e-mails are not
// sent but their links and codes printed to the log; and whoever reaches it can obtain a
// valid token for any address. tollgate serves it only while it listens on a loopback
// address, and never outside development.
//
// Users and the signing key live in the database, so user ids (and the billing links made
// to them) survive a restart, and a token minted by one process ("tollgate dev token")
// verifies in another. Sessions, refresh tokens, e-mailed links and codes live in the
// memory of the process that issued them, as the tests' identity service keeps them.
type Service struct {
	*Emulator
}

// New opens the service over d, creating its signing key on first use. base is the URL it
// is reached at, such as http://localhost:8080/_dev/auth: the tokens' issuer. Handler
// serves under base's path, and links may lead back to base's origin only. hook (when not
// nil) customises its access tokens' claims, as the identity service's hook does.
func New(ctx context.Context, d *db.DB, base string, log *slog.Logger, hook AccessTokenHook) (*Service, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || u.Path == "" || u.Path == "/" {
		return nil, fmt.Errorf("development identity service: want a base URL with a path, got %q", base)
	}
	key, kid, err := loadKey(ctx, d, time.Now())
	if err != nil {
		return nil, fmt.Errorf("development identity service: %w", err)
	}
	origin := strings.TrimSuffix(strings.TrimRight(base, "/"), strings.TrimRight(u.Path, "/"))
	e, err := NewEmulator(Config{
		Base: base, Store: dbStore{d}, Key: key, KeyID: kid, Log: log, Mailer: logMail(log), AccessTokenHook: hook,
		Settings: Settings{Autoconfirm: true, CodesInEmails: true, SiteURL: origin, RedirectOrigins: []string{origin}},
	})
	if err != nil {
		return nil, err
	}
	return &Service{Emulator: e}, nil
}

// logMail prints what an e-mail would hold, its link and its code, where the developer
// running the server reads it.
func logMail(log *slog.Logger) func(context.Context, Email, string) {
	return func(ctx context.Context, m Email, code string) {
		log.InfoContext(ctx, "development identity service: e-mail not sent; open its link or enter its code",
			"to", m.To, "kind", m.Type, "link", m.Link, "code", code)
	}
}

// Client is an HTTP client whose requests to the service are answered in-process, by its
// handler: the forms and the key set reach it without a network, whatever PUBLIC_URL says
// and whether or not the listener is up yet.
func (s *Service) Client() *http.Client {
	return &http.Client{Transport: handlerTransport{s.Handler()}, Timeout: 10 * time.Second}
}
