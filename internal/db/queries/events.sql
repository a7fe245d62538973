-- name: UpsertProviderEvent :one
-- A repeat delivery rewrites type, payload and processing state but keeps received_at. The
-- event is marked processed here, in the statement that stores it, since its processing runs
-- in the same transaction: only an event that fails to apply is marked again (with its
-- reason), and a transaction that fails takes the mark with it.
insert into provider_events (provider, provider_event_id, event_type, payload, received_at, processed_at, created_at, updated_at)
values (sqlc.arg(provider), sqlc.arg(provider_event_id), sqlc.arg(event_type), sqlc.arg(payload), sqlc.arg(now), sqlc.arg(now), sqlc.arg(now), sqlc.arg(now))
on conflict (provider, provider_event_id) do update
set event_type = excluded.event_type,
    payload = excluded.payload,
    processed_at = excluded.processed_at,
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
