-- name: InsertOutboundEvent :exec
insert into outbound_new_events (message_id, user_id, event_type, payload, created_at, give_up_at)
values (sqlc.arg(message_id), sqlc.arg(user_id), sqlc.arg(event_type), sqlc.arg(payload), sqlc.arg(now), sqlc.arg(give_up_at));

-- name: LockOutboundMove :exec
-- For Postgres: one instance at a time moves recorded events in, held until the
-- transaction ends, so that two never lease two events of one user at once, each unaware of
-- the other's. MoveNewEvents, a statement of its own, then sees what the last mover committed.
select pg_advisory_xact_lock(7046163512);

-- name: MoveNewEvents :many
-- Moves up to max recorded events, oldest first, into outbound_deliveries, due now, for
-- Postgres: in one statement, after LockOutboundMove. Up to claim of them are leased as
-- they go in, as ClaimDeliveries would (each the oldest pending of its user), which spares
-- rewriting them; those come back.
with moved as (
    delete from outbound_new_events where id in (
        select n.id from outbound_new_events n order by n.id limit sqlc.arg(max)
    )
    returning id, message_id, user_id, event_type, payload, created_at, give_up_at
),
heads as (
    select r.id from (
        select m.id, row_number() over (partition by m.user_id order by m.id) as nth,
            exists (select 1 from outbound_deliveries d where d.user_id = m.user_id and d.status = 'pending') as waits
        from moved m
    ) r
    where r.nth = 1 and not r.waits
    order by r.id
    limit sqlc.arg(claim)
),
inserted as (
    insert into outbound_deliveries (message_id, user_id, event_type, payload, status, attempts, lease_until, next_attempt_at, give_up_at, created_at)
    select m.message_id, m.user_id, m.event_type, m.payload, 'pending',
        case when h.id is null then 0 else 1 end,
        case when h.id is null then null else cast(sqlc.arg(lease_until) as timestamptz) end,
        m.created_at, m.give_up_at, m.created_at
    from moved m left join heads h on h.id = m.id
    order by m.id
    returning id, message_id, user_id, payload, attempts, created_at, give_up_at
)
select i.id, i.message_id, i.user_id, i.payload, i.attempts, i.created_at, i.give_up_at from inserted i where i.attempts = 1 order by i.id;

-- name: LastNewEventToMove :one
-- MoveNewEvents for SQLite, where a statement cannot both delete and insert, in three: the
-- id up to which to move (0: none), then CopyNewEventsUpTo and DeleteNewEventsUpTo. The
-- single writer keeps anything from coming between them.
select cast(coalesce(max(b.id), 0) as bigint) from (select n.id from outbound_new_events n order by n.id limit sqlc.arg(max)) b;

-- name: CopyNewEventsUpTo :exec
insert into outbound_deliveries (message_id, user_id, event_type, payload, status, next_attempt_at, give_up_at, created_at)
select n.message_id, n.user_id, n.event_type, n.payload, 'pending', n.created_at, n.give_up_at, n.created_at
from outbound_new_events n where n.id <= sqlc.arg(last) order by n.id;

-- name: DeleteNewEventsUpTo :exec
delete from outbound_new_events where id <= sqlc.arg(last);

-- name: ClaimDeliveries :many
-- Leases up to max due deliveries, at most one per user: the oldest pending of its user, so
-- one user's events go out in order. On SQLite, the single writer makes the update the claim.
-- The + keeps SQLite from reading the table in id order to spare the sort, which it chose
-- for a limit as large as the deliverer's, reading every delivered row at each claim: the
-- pending ones come from their partial index instead, and are sorted, a few hundred at most.
update outbound_deliveries set lease_until = sqlc.arg(lease_until), attempts = attempts + 1
where id in (
    select d.id from outbound_deliveries d
    where d.status = 'pending' and d.next_attempt_at <= sqlc.arg(now)
      and (d.lease_until is null or d.lease_until <= sqlc.arg(now))
      and not exists (select 1 from outbound_deliveries e where e.user_id = d.user_id and e.status = 'pending' and e.id < d.id)
    order by +d.id
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
limit sqlc.arg(max) offset sqlc.arg(skip);

-- name: RetryDelivery :execrows
-- Makes a pending or failed delivery due now, with a new retry window; a delivered one is left.
update outbound_deliveries set status = 'pending', next_attempt_at = sqlc.arg(now), give_up_at = sqlc.arg(give_up_at), lease_until = null
where id = sqlc.arg(id) and status <> 'delivered';

-- name: RetryFailedDeliveries :execrows
update outbound_deliveries set status = 'pending', next_attempt_at = sqlc.arg(now), give_up_at = sqlc.arg(give_up_at), lease_until = null
where status = 'failed';

-- name: CountPendingDeliveries :one
select (select count(*) from outbound_deliveries where status = 'pending') + (select count(*) from outbound_new_events);

-- name: CountNewEvents :one
select count(*) from outbound_new_events;

-- name: DeliveryUser :one
-- The user a delivery is about (the audit log names them).
select user_id from outbound_deliveries where id = sqlc.arg(id);
