-- name: InsertOutboundEvent :exec
-- For Postgres, where the identity gives the id.
insert into outbound_new_events (message_id, user_id, event_type, payload, created_at, give_up_at)
values (sqlc.arg(message_id), sqlc.arg(user_id), sqlc.arg(event_type), sqlc.arg(payload), sqlc.arg(now), sqlc.arg(give_up_at));

-- name: InsertOutboundEventNumbered :exec
-- For SQLite, whose single writer makes it safe: the id is above those of both tables,
-- since rowids of an emptied table begin again.
insert into outbound_new_events (id, message_id, user_id, event_type, payload, created_at, give_up_at)
values ((select coalesce(max(t.id), 0) + 1 from (
            select max(n.id) as id from outbound_new_events n
            union all select max(d.id) from outbound_deliveries d) t),
        sqlc.arg(message_id), sqlc.arg(user_id), sqlc.arg(event_type), sqlc.arg(payload), sqlc.arg(now), sqlc.arg(give_up_at));

-- name: ClaimNewEvents :many
-- Leases up to max recorded events for their first attempt, each the oldest recorded of
-- its user, of a user with no delivery pending (DeferWaitingNewEvents took those). On
-- SQLite, the single writer makes the update the claim.
update outbound_new_events set lease_until = sqlc.arg(lease_until)
where id in (
    select r.id from (
        select n.id, row_number() over (partition by n.user_id order by n.id) as nth,
            (n.lease_until is null or n.lease_until <= sqlc.arg(now)) as free,
            exists (select 1 from outbound_deliveries d where d.user_id = n.user_id and d.status = 'pending') as waits
        from outbound_new_events n
    ) r
    where r.nth = 1 and r.free and not r.waits
    order by r.id
    limit sqlc.arg(max)
)
returning id, message_id, user_id, payload, created_at, give_up_at;

-- name: ClaimNewEventsSkipLocked :many
-- ClaimNewEvents for Postgres, where several instances claim at once: rows another
-- instance is claiming are skipped, and the lease is checked again on the row as locked.
update outbound_new_events set lease_until = sqlc.arg(lease_until)
where id in (
    select l.id from outbound_new_events l
    where (l.lease_until is null or l.lease_until <= sqlc.arg(now))
      and l.id in (
        select r.id from (
            select n.id, row_number() over (partition by n.user_id order by n.id) as nth,
                (n.lease_until is null or n.lease_until <= sqlc.arg(now)) as free,
                exists (select 1 from outbound_deliveries d where d.user_id = n.user_id and d.status = 'pending') as waits
            from outbound_new_events n
        ) r
        where r.nth = 1 and r.free and not r.waits
        order by r.id
        limit sqlc.arg(max)
      )
    for update skip locked
)
returning id, message_id, user_id, payload, created_at, give_up_at;

-- name: SettleNewEvent :exec
-- Takes a recorded event into outbound_deliveries with its first attempt's outcome:
-- delivered (at delivered_at), or pending (again at next_attempt_at), or failed. Then
-- DeleteSettledNewEvents.
insert into outbound_deliveries (id, message_id, user_id, event_type, payload, status, attempts, next_attempt_at, give_up_at, last_error, created_at, delivered_at)
select n.id, n.message_id, n.user_id, n.event_type, n.payload, sqlc.arg(status), 1, sqlc.arg(next_attempt_at), n.give_up_at, sqlc.narg(last_error), n.created_at, sqlc.narg(delivered_at)
from outbound_new_events n where n.id = sqlc.arg(id);

-- name: SettleNewEvents :exec
-- SettleNewEvent for many events in one statement, for Postgres, where each would cost a
-- round trip: settled is a JSON array of {"id","status","at","next","error"}.
with outcome as (
    select cast(o.value->>'id' as bigint) as id, o.value->>'status' as status, cast(o.value->>'at' as timestamptz) as at,
        cast(o.value->>'next' as timestamptz) as next, o.value->>'error' as error
    from jsonb_array_elements(sqlc.arg(settled)::jsonb) as o(value)
),
moved as (
    delete from outbound_new_events n where n.id in (select outcome.id from outcome)
    returning n.id, n.message_id, n.user_id, n.event_type, n.payload, n.created_at, n.give_up_at
)
insert into outbound_deliveries (id, message_id, user_id, event_type, payload, status, attempts, next_attempt_at, give_up_at, last_error, created_at, delivered_at)
select m.id, m.message_id, m.user_id, m.event_type, m.payload, c.status, 1, c.next, m.give_up_at, c.error, m.created_at,
    case when c.status = 'delivered' then c.at end
from moved m join outcome c on c.id = m.id
order by m.id;

-- name: DeferWaitingNewEvents :exec
-- Takes the recorded events that must wait, because a delivery of their user is pending,
-- into outbound_deliveries, pending, so that ClaimDeliveries sends them in their turn.
-- Then DeleteSettledNewEvents.
insert into outbound_deliveries (id, message_id, user_id, event_type, payload, status, attempts, next_attempt_at, give_up_at, created_at)
select n.id, n.message_id, n.user_id, n.event_type, n.payload, 'pending', 0, n.created_at, n.give_up_at, n.created_at
from outbound_new_events n
where (n.lease_until is null or n.lease_until <= sqlc.arg(now))
  and exists (select 1 from outbound_deliveries d where d.user_id = n.user_id and d.status = 'pending')
order by n.id
on conflict (id) do nothing;

-- name: DeleteSettledNewEvents :exec
-- Removes the recorded events that are in outbound_deliveries now.
delete from outbound_new_events where exists (select 1 from outbound_deliveries d where d.id = outbound_new_events.id);

-- name: ClaimDeliveries :many
-- Leases up to max due deliveries, at most one per user: the oldest pending of its user, so
-- one user's events go out in order. On SQLite, the single writer makes the update the claim.
update outbound_deliveries set lease_until = sqlc.arg(lease_until), attempts = attempts + 1
where id in (
    select d.id from outbound_deliveries d
    where d.status = 'pending' and d.next_attempt_at <= sqlc.arg(now)
      and (d.lease_until is null or d.lease_until <= sqlc.arg(now))
      and not exists (select 1 from outbound_deliveries e where e.user_id = d.user_id and e.status = 'pending' and e.id < d.id)
    order by d.id
    limit sqlc.arg(max)
)
returning id, message_id, user_id, payload, attempts, created_at, give_up_at;

-- name: ClaimDeliveriesSkipLocked :many
-- ClaimDeliveries for Postgres, where several instances claim at once: rows another
-- instance is claiming are skipped rather than waited for.
update outbound_deliveries set lease_until = sqlc.arg(lease_until), attempts = attempts + 1
where id in (
    select d.id from outbound_deliveries d
    where d.status = 'pending' and d.next_attempt_at <= sqlc.arg(now)
      and (d.lease_until is null or d.lease_until <= sqlc.arg(now))
      and not exists (select 1 from outbound_deliveries e where e.user_id = d.user_id and e.status = 'pending' and e.id < d.id)
    order by d.id
    limit sqlc.arg(max)
    for update skip locked
)
returning id, message_id, user_id, payload, attempts, created_at, give_up_at;

-- name: MarkDelivered :exec
update outbound_deliveries set status = 'delivered', delivered_at = sqlc.arg(now), lease_until = null, last_error = null
where id = sqlc.arg(id);

-- name: MarkAllDelivered :exec
-- MarkDelivered for many deliveries in one statement, for Postgres, where each would cost a
-- round trip: delivered is a JSON array of {"id":…,"at":…}.
update outbound_deliveries o set status = 'delivered', delivered_at = d.at, lease_until = null, last_error = null
from jsonb_to_recordset(sqlc.arg(delivered)::jsonb) as d(id bigint, at timestamptz)
where o.id = d.id;

-- name: MarkAttemptFailed :exec
-- status is pending (tried again at next_attempt_at) or failed (given up).
update outbound_deliveries set status = sqlc.arg(status), next_attempt_at = sqlc.arg(next_attempt_at), lease_until = null, last_error = sqlc.arg(last_error)
where id = sqlc.arg(id);

-- name: ListDeliveries :many
select id, message_id, user_id, event_type, status, attempts, next_attempt_at, last_error, created_at, delivered_at
from outbound_deliveries
where (sqlc.arg(status) = '' or status = sqlc.arg(status))
  and (sqlc.arg(user_id) = '' or user_id = sqlc.arg(user_id))
order by id desc
limit sqlc.arg(max);

-- name: ListNewEvents :many
-- Recorded events not yet attempted, or in their first attempt (leased): pending.
select id, message_id, user_id, event_type, lease_until, created_at
from outbound_new_events
where (sqlc.arg(user_id) = '' or user_id = sqlc.arg(user_id))
order by id desc
limit sqlc.arg(max);

-- name: IsNewEvent :one
select count(*) from outbound_new_events where id = sqlc.arg(id);

-- name: RetryDelivery :execrows
-- Makes a pending or failed delivery due now, with a new retry window; a delivered one is left.
update outbound_deliveries set status = 'pending', next_attempt_at = sqlc.arg(now), give_up_at = sqlc.arg(give_up_at), lease_until = null
where id = sqlc.arg(id) and status <> 'delivered';

-- name: RetryFailedDeliveries :execrows
update outbound_deliveries set status = 'pending', next_attempt_at = sqlc.arg(now), give_up_at = sqlc.arg(give_up_at), lease_until = null
where status = 'failed';

-- name: CountPendingDeliveries :one
select (select count(*) from outbound_deliveries where status = 'pending') + (select count(*) from outbound_new_events);
