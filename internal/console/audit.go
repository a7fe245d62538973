package console

import (
	"context"

	"github.com/tollgate/tollgate/internal/db/dbq"
)

// audit records an operator's action: a line in the log and a row in console_audit, both
// naming the operator. A failure to write the row is logged; the action stands.
func (c *Console) audit(ctx context.Context, action, target, result string) {
	operator := ""
	if op := operatorOf(ctx); op != nil {
		operator = op.Email
	}
	c.opts.Log.InfoContext(ctx, "console action", "operator", operator, "action", action, "target", target, "result", result)
	if err := dbq.New(c.opts.DB).InsertConsoleAudit(context.WithoutCancel(ctx), dbq.InsertConsoleAuditParams{
		Operator: operator, Action: action, Target: target, Result: result, Now: c.now(),
	}); err != nil {
		c.opts.Log.WarnContext(ctx, "console action not recorded in the audit table", "action", action, "error", err)
	}
}
