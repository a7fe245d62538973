-- name: UpsertProviderEvent :one
-- A repeat delivery rewrites type, payload and processing state but keeps received_at.
insert into provider_events (provider, provider_event_id, event_type, payload, received_at, created_at, updated_at)
values (sqlc.arg(provider), sqlc.arg(provider_event_id), sqlc.arg(event_type), sqlc.arg(payload), sqlc.arg(now), sqlc.arg(now), sqlc.arg(now))
on conflict (provider, provider_event_id) do update
set event_type = excluded.event_type,
    payload = excluded.payload,
    processed_at = null,
    processing_error = null,
    updated_at = excluded.updated_at
returning id;

-- name: MarkEventProcessed :exec
update provider_events
set processed_at = sqlc.arg(processed_at), processing_error = sqlc.narg(processing_error), updated_at = sqlc.arg(processed_at)
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

-- name: MarkEventProcessedRecording :exec
-- MarkEventProcessed and InsertOutboundDelivery in one statement, for Postgres: an event
-- that changed a billing answer records its outbound event without a round trip of its own.
with recorded as (
    insert into outbound_deliveries (message_id, user_id, event_type, payload, status, next_attempt_at, give_up_at, created_at)
    values (sqlc.arg(message_id), sqlc.arg(user_id), sqlc.arg(event_type), sqlc.arg(payload), 'pending', sqlc.arg(now), sqlc.arg(give_up_at), sqlc.arg(now))
)
update provider_events
set processed_at = sqlc.arg(processed_at), processing_error = sqlc.narg(processing_error), updated_at = sqlc.arg(processed_at)
where provider_events.id = sqlc.arg(id);
