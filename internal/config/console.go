package config

import (
	"net/mail"
	"strings"
)

// loadAdminEmails reads ADMIN_EMAILS: the operators' addresses, lower-cased. The console is
// off without them, and off with the forms (FORMS=off), through which operators sign in.
func loadAdminEmails(get func(name, def string) string, fail func(name, format string, args ...any), forms bool) []string {
	var emails []string
	for _, raw := range splitList(get("ADMIN_EMAILS", "")) {
		addr, err := mail.ParseAddress(raw)
		if err != nil || addr.Address != raw {
			fail("ADMIN_EMAILS", "want e-mail addresses separated by commas, got %q", raw)
			continue
		}
		emails = append(emails, strings.ToLower(raw))
	}
	if !forms {
		return nil
	}
	return emails
}
