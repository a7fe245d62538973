package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate/tollgate/internal/devidentity"
)

func cmdDevToken(fs *flag.FlagSet) command {
	var email string
	fs.StringVar(&email, "email", "", "the user's e-mail address (required)")
	return command{
		required: []string{"email"},
		help: "Prints a bearer token for the user with that e-mail, and their id, from the development\n" +
			"identity service (APP_ENV=development, AUTH_URL unset), creating the user if there is none.\n" +
			"The token is valid for an hour, in any serve process on the same database, and carries the\n" +
			"user's billing answer in its tollgate claim, as the access token hook adds it:\n" +
			"  curl -H \"Authorization: Bearer $TOKEN\" http://localhost:8080/api/v1/me",
		run: func(ctx context.Context, e env) error {
			if !e.cfg.DevIdentity {
				return errors.New("dev token needs the development identity service: APP_ENV=development with AUTH_URL unset (with AUTH_URL set, sign in through that identity service)")
			}
			d, err := openDB(ctx, e)
			if err != nil {
				return err
			}
			defer d.Close()
			parts, err := newBilling(d, e, prometheus.NewRegistry())
			if err != nil {
				return err
			}
			held := newHeldAnswers(d, e, parts.reader, nil)
			dev, err := devidentity.New(ctx, d, e.cfg.AuthURL, e.log, held.hook.Customize)
			if err != nil {
				return err
			}
			tok, err := dev.Mint(ctx, email)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "user_id: %s\nemail: %s\nexpires_at: %s\naccess_token: %s\n",
				tok.UserID, tok.Email, tok.ExpiresAt.UTC().Format(time.RFC3339), tok.AccessToken)
			return nil
		},
	}
}
