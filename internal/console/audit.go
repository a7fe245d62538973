package console

import (
	"context"
	"net/http"

	"github.com/tollgate/tollgate/internal/audit"
)

type auditData struct {
	Actor, Action string
	Entries       []audit.Entry
	Page          int
	More          bool
}

// auditLog is GET /admin/audit[?actor=…&action=…]: every action that changed billing state
// by hand, newest first, by anyone (operators, commands, service keys).
func (c *Console) auditLog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	data := auditData{Actor: q.Get("actor"), Action: q.Get("action"), Page: pageNumber(r)}
	list, err := audit.List(r.Context(), c.opts.DB, audit.Filter{Actor: data.Actor, Action: data.Action,
		Max: pageSize + 1, Skip: (data.Page - 1) * pageSize})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	data.More = len(list) > pageSize
	data.Entries = list[:min(len(list), pageSize)]
	c.render(w, r, http.StatusOK, "audit", page{Title: "Audit log", Section: "audit", Data: data})
}

// audit records an operator's action on what concerns userID ("" for no one in
// particular): a line in the log and a record in the audit log, both naming the operator.
// A failure to write the record is logged; the action stands.
func (c *Console) audit(ctx context.Context, action, target, userID, result string) {
	operator := ""
	if op := operatorOf(ctx); op != nil {
		operator = op.Email
	}
	c.opts.Log.InfoContext(ctx, "console action", "operator", operator, "action", action, "target", target, "result", result)
	err := audit.Record(context.WithoutCancel(ctx), c.opts.DB, audit.Entry{
		At: c.now(), Actor: operator, Action: action, Target: target, UserID: userID, Result: result,
	})
	if err != nil {
		c.opts.Log.WarnContext(ctx, "console action not recorded in the audit log", "action", action, "error", err)
	}
}
