package app

import (
	"github.com/tollgate/tollgate/internal/console"
)

// newConsole builds the operator console, or nil when it is off: no ADMIN_EMAILS, or no
// forms to sign operators in.
func (s *Server) newConsole() (*console.Console, error) {
	if len(s.cfg.AdminEmails) == 0 || !s.cfg.Forms {
		return nil, nil
	}
	opts := console.Options{
		DB: s.db, Operators: s.cfg.AdminEmails, CurrentUser: s.web.CurrentUser, NotFound: s.web.NotFound,
		Billing: s.billing.reader, Pipeline: s.billing.pipeline, Grants: s.billing.grants,
		Stores: s.env.stores.Names(), Dashboard: s.env.stores.Dashboard, TypeNote: s.env.stores.TypeNote,
		AppName: s.cfg.AppName, LogoURL: s.cfg.BrandLogoURL, DevIdentity: s.cfg.DevIdentity, Log: s.env.log,
	}
	if s.deliverer != nil {
		opts.Wake = s.deliverer.Wake
	}
	return console.New(opts)
}
