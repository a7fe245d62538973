package console

import (
	"context"

	"github.com/tollgate/tollgate/internal/audit"
)

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
