-- name: AddUsage :one
-- Adds amount only while the total stays within the limit; no row back means refused. The
-- conditional upsert is one statement, so concurrent callers can never overshoot.
insert into usage_counters (user_id, name, period_end, used, created_at, updated_at)
values (sqlc.arg(user_id), sqlc.arg(name), sqlc.arg(period_end), sqlc.arg(amount), sqlc.arg(now), sqlc.arg(now))
on conflict (user_id, name, period_end) do update
set used = usage_counters.used + excluded.used, updated_at = excluded.updated_at
where usage_counters.used + excluded.used <= sqlc.arg(max_used)
returning used;

-- name: ListUsage :many
select name, used from usage_counters where user_id = sqlc.arg(user_id) and period_end = sqlc.arg(period_end);

-- name: ListUsageInPeriods :many
-- The counters of two periods at once: a billing change's before and after.
select name, period_end, used from usage_counters
where user_id = sqlc.arg(user_id) and (period_end = sqlc.arg(period_a) or period_end = sqlc.arg(period_b));
