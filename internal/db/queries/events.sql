-- name: RecordProviderEvent :exec
-- Stores an event with what became of it, in the transaction that processed it. A repeat
-- delivery rewrites type, payload and processing state but keeps received_at, and keeps
-- the outcome and change of the first delivery that was not refused (see SetEventOutcome).
-- A grant's events are tollgate's own and never redelivered: one found a duplicate is a
-- concurrent action that lost (a second revocation of one grant), and the payload applied
-- — the winner's reason — is kept.
insert into provider_events (provider, provider_event_id, event_type, payload, received_at, processed_at, processing_error,
    outcome, user_id, subscription_id, plan_before, status_before, period_end_before, plan_after, status_after, period_end_after,
    moved_from_user_id, created_at, updated_at)
values (sqlc.arg(provider), sqlc.arg(provider_event_id), sqlc.arg(event_type), sqlc.arg(payload), sqlc.arg(now), sqlc.arg(now), sqlc.narg(processing_error),
    sqlc.arg(outcome), sqlc.narg(user_id), sqlc.narg(subscription_id), sqlc.narg(plan_before), sqlc.narg(status_before), sqlc.narg(period_end_before),
    sqlc.narg(plan_after), sqlc.narg(status_after), sqlc.narg(period_end_after), sqlc.narg(moved_from_user_id), sqlc.arg(now), sqlc.arg(now))
on conflict (provider, provider_event_id) do update
set event_type = excluded.event_type,
    payload = case when provider_events.provider = 'grant' and excluded.outcome = 'duplicate' then provider_events.payload else excluded.payload end,
    processed_at = excluded.processed_at,
    processing_error = excluded.processing_error,
    outcome = case when provider_events.outcome is null or provider_events.outcome in ('unresolved', 'invalid') then excluded.outcome else provider_events.outcome end,
    user_id = coalesce(provider_events.user_id, excluded.user_id),
    subscription_id = coalesce(provider_events.subscription_id, excluded.subscription_id),
    plan_before = case when provider_events.plan_after is null then excluded.plan_before else provider_events.plan_before end,
    status_before = case when provider_events.status_after is null then excluded.status_before else provider_events.status_before end,
    period_end_before = case when provider_events.status_after is null then excluded.period_end_before else provider_events.period_end_before end,
    plan_after = coalesce(provider_events.plan_after, excluded.plan_after),
    status_after = coalesce(provider_events.status_after, excluded.status_after),
    period_end_after = case when provider_events.status_after is null then excluded.period_end_after else provider_events.period_end_after end,
    moved_from_user_id = coalesce(provider_events.moved_from_user_id, excluded.moved_from_user_id),
    updated_at = excluded.updated_at;

-- name: SetEventOutcome :exec
-- A replay's result. An event keeps the outcome and change of its first processing that
-- was not refused: replaying an applied event finds a duplicate, which is not news.
update provider_events
set processed_at = sqlc.arg(now),
    processing_error = sqlc.narg(processing_error),
    outcome = case when outcome is null or outcome in ('unresolved', 'invalid') then sqlc.arg(outcome) else outcome end,
    user_id = coalesce(user_id, sqlc.narg(user_id)),
    subscription_id = coalesce(subscription_id, sqlc.narg(subscription_id)),
    plan_before = case when status_after is null then sqlc.narg(plan_before) else plan_before end,
    status_before = case when status_after is null then sqlc.narg(status_before) else status_before end,
    period_end_before = case when status_after is null then sqlc.narg(period_end_before) else period_end_before end,
    plan_after = coalesce(plan_after, sqlc.narg(plan_after)),
    period_end_after = case when status_after is null then sqlc.narg(period_end_after) else period_end_after end,
    status_after = coalesce(status_after, sqlc.narg(status_after)),
    moved_from_user_id = coalesce(moved_from_user_id, sqlc.narg(moved_from_user_id)),
    updated_at = sqlc.arg(now)
where id = sqlc.arg(id);

-- name: GetProviderEvent :one
select id, provider, provider_event_id, event_type, payload, received_at, processed_at, processing_error
from provider_events
where provider = sqlc.arg(provider) and provider_event_id = sqlc.arg(provider_event_id);

-- name: ListEventsForReplay :many
-- Empty provider or event id means "any"; since is always given (the zero time for "ever").
select id, provider, provider_event_id
from provider_events
where (sqlc.arg(provider) = '' or provider = sqlc.arg(provider))
  and (sqlc.arg(provider_event_id) = '' or provider_event_id = sqlc.arg(provider_event_id))
  and received_at >= sqlc.arg(since)
  and (sqlc.arg(only_unprocessed) = false or processed_at is null or processing_error is not null)
order by received_at, provider_event_id;

-- name: EventUser :one
-- The user a stored event concerns (null when it resolved to none), for the audit log.
select user_id from provider_events where provider = sqlc.arg(provider) and provider_event_id = sqlc.arg(provider_event_id);
