-- name: InsertAudit :exec
insert into audit_log (actor, action, target, user_id, result, created_at)
values (sqlc.arg(actor), sqlc.arg(action), sqlc.arg(target), sqlc.narg(user_id), sqlc.arg(result), sqlc.arg(now));

-- name: ListAudit :many
-- The audit log, newest first, from since up to (not including) until, optionally of one
-- user, actor or action.
select id, actor, action, target, user_id, result, created_at
from audit_log
where created_at >= sqlc.arg(since) and created_at < sqlc.arg(until)
  and (user_id = sqlc.arg(user_id) or sqlc.arg(user_id) = '')
  and (actor = sqlc.arg(actor) or sqlc.arg(actor) = '')
  and (action = sqlc.arg(action) or sqlc.arg(action) = '')
order by created_at desc, id desc
limit sqlc.arg(max) offset sqlc.arg(skip);
