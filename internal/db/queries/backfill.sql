-- name: GetBackfillCursor :one
select starting_after, done from backfill_cursors
where provider = sqlc.arg(provider) and scope = sqlc.arg(scope);

-- name: SaveBackfillCursor :exec
insert into backfill_cursors (provider, scope, starting_after, done, created_at, updated_at)
values (sqlc.arg(provider), sqlc.arg(scope), sqlc.arg(starting_after), sqlc.arg(done), sqlc.arg(now), sqlc.arg(now))
on conflict (provider, scope) do update
set starting_after = excluded.starting_after, done = excluded.done, updated_at = excluded.updated_at;

-- name: DeleteBackfillCursor :exec
delete from backfill_cursors where provider = sqlc.arg(provider) and scope = sqlc.arg(scope);

-- name: GetCanonicalSubscription :one
-- The canonical answer one provider subscription gives: what a backfill reports as changed.
select s.status, s.current_period_end, p.key as plan_key, c.user_id
from subscriptions s
join provider_subscriptions ps on ps.id = s.provider_subscription_id
join plans p on p.id = s.plan_id
join billing_customers c on c.id = s.billing_customer_id
where ps.provider = sqlc.arg(provider) and ps.provider_subscription_id = sqlc.arg(provider_subscription_id);
