-- name: PrunableEvents :many
-- Stored events received before cutoff that retention may remove, oldest first, after the
-- one at (after_received, after_id) (a page's last; the zero time to start), at most max:
-- not a subscription's newest (the one its stored state came from), and, unless received
-- before unresolved_cutoff too, not unresolved or unprocessed. Every column, for the
-- archive.
select e.id, e.provider, e.provider_event_id, e.event_type, e.payload, e.received_at, e.processed_at, e.processing_error,
    e.outcome, e.user_id, e.subscription_id, e.plan_before, e.status_before, e.period_end_before, e.plan_after,
    e.status_after, e.period_end_after, e.moved_from_user_id, e.created_at, e.updated_at
from provider_events e
where e.received_at < sqlc.arg(cutoff)
  and (e.received_at > sqlc.arg(after_received) or (e.received_at = sqlc.arg(after_received) and e.id > sqlc.arg(after_id)))
  and (e.received_at < sqlc.arg(unresolved_cutoff) or (e.processed_at is not null and coalesce(e.outcome, '') <> 'unresolved'))
  and not exists (select 1 from provider_subscriptions ps where ps.provider = e.provider and ps.last_event_id = e.provider_event_id)
order by e.received_at, e.id
limit sqlc.arg(max);

-- name: RememberPrunedEvent :exec
insert into pruned_events (provider, provider_event_id, pruned_at)
values (sqlc.arg(provider), sqlc.arg(provider_event_id), sqlc.arg(now))
on conflict (provider, provider_event_id) do nothing;

-- name: DeleteProviderEvent :exec
delete from provider_events where id = sqlc.arg(id);

-- name: WasPruned :one
select count(*) from pruned_events where provider = sqlc.arg(provider) and provider_event_id = sqlc.arg(provider_event_id);

-- name: EventsBefore :many
-- Every stored event received before before, oldest first, after the one with id after
-- (a page's last; '' to start), at most max: what events export writes.
select id, provider, provider_event_id, event_type, payload, received_at, processed_at, processing_error, outcome,
    user_id, subscription_id, plan_before, status_before, period_end_before, plan_after, status_after, period_end_after,
    moved_from_user_id, created_at, updated_at
from provider_events
where received_at < sqlc.arg(before)
  and (received_at > sqlc.arg(after_received) or (received_at = sqlc.arg(after_received) and id > sqlc.arg(after_id)))
order by received_at, id
limit sqlc.arg(max);

-- name: PruneEventsAtOnce :one
-- Postgres only: the first max events PrunableEvents would give, removed in one statement,
-- each leaving its key; how many it removed, and how many of them were unresolved.
with doomed as (
    delete from provider_events where id in (
        select e.id from provider_events e
        where e.received_at < sqlc.arg(cutoff)
          and (e.received_at < sqlc.arg(unresolved_cutoff) or (e.processed_at is not null and coalesce(e.outcome, '') <> 'unresolved'))
          and not exists (select 1 from provider_subscriptions ps where ps.provider = e.provider and ps.last_event_id = e.provider_event_id)
        order by e.received_at, e.id
        limit sqlc.arg(max))
    returning provider, provider_event_id, (processed_at is null or coalesce(outcome, '') = 'unresolved') as unresolved
), kept as (
    insert into pruned_events (provider, provider_event_id, pruned_at)
    select provider, provider_event_id, sqlc.arg(now) from doomed
    on conflict (provider, provider_event_id) do nothing
)
select count(*) as removed, count(*) filter (where unresolved) as unresolved from doomed;

-- The next two remove the first max events PrunableEvents would give, in one transaction
-- of SQLite's single writer (so both see the same events): their keys kept, then the
-- events deleted, saying for each whether it was unresolved.

-- name: KeepPrunableKeys :exec
insert into pruned_events (provider, provider_event_id, pruned_at)
select e.provider, e.provider_event_id, sqlc.arg(now)
from provider_events e
where e.received_at < sqlc.arg(cutoff)
  and (e.received_at < sqlc.arg(unresolved_cutoff) or (e.processed_at is not null and coalesce(e.outcome, '') <> 'unresolved'))
  and not exists (select 1 from provider_subscriptions ps where ps.provider = e.provider and ps.last_event_id = e.provider_event_id)
order by e.received_at, e.id
limit sqlc.arg(max)
on conflict (provider, provider_event_id) do nothing;

-- name: DeletePrunable :many
delete from provider_events where id in (
    select e.id from provider_events e
    where e.received_at < sqlc.arg(cutoff)
      and (e.received_at < sqlc.arg(unresolved_cutoff) or (e.processed_at is not null and coalesce(e.outcome, '') <> 'unresolved'))
      and not exists (select 1 from provider_subscriptions ps where ps.provider = e.provider and ps.last_event_id = e.provider_event_id)
    order by e.received_at, e.id
    limit sqlc.arg(max))
returning (processed_at is null or coalesce(outcome, '') = 'unresolved') as unresolved;
