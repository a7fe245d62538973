-- name: GetCustomerByWebID :one
select id, user_id from billing_customers where web_customer_id = sqlc.arg(web_customer_id);

-- name: UpsertCustomer :one
insert into billing_customers (user_id, created_at, updated_at)
values (sqlc.arg(user_id), sqlc.arg(now), sqlc.arg(now))
on conflict (user_id) do update set user_id = excluded.user_id
returning id, web_customer_id;

-- name: LinkWebCustomer :exec
-- Only a customer not yet linked is linked; an existing link is never moved.
update billing_customers set web_customer_id = sqlc.arg(web_customer_id), updated_at = sqlc.arg(now)
where id = sqlc.arg(id) and web_customer_id is null;

-- name: PlanForPrice :one
select p.id, p.key, p.name, p.tier from plan_prices pp join plans p on p.id = pp.plan_id
where pp.provider = sqlc.arg(provider) and pp.price_id = sqlc.arg(price_id);

-- name: LockProviderSubscription :one
-- Creates the row if needed and, on Postgres, holds its row lock until the transaction ends,
-- so that events for one subscription are applied one at a time (SQLite has one writer anyway).
insert into provider_subscriptions (provider, provider_subscription_id, created_at, updated_at)
values (sqlc.arg(provider), sqlc.arg(provider_subscription_id), sqlc.arg(now), sqlc.arg(now))
on conflict (provider, provider_subscription_id) do update set provider_subscription_id = excluded.provider_subscription_id
returning id, provider_subscription_id, provider_customer_id, state, last_event_id, last_event_type, last_event_at, paid_through, paid_event_at,
    -- The plan catalogue's version, here to save its own round trip.
    (select version from plans_version) as plans_version,
    -- The canonical row as it stands before the event, for the event's record.
    coalesce((select s.plan_id from subscriptions s where s.provider_subscription_id = provider_subscriptions.id), 0) as plan_before,
    coalesce((select s.status from subscriptions s where s.provider_subscription_id = provider_subscriptions.id), '') as status_before,
    (select s.current_period_end from subscriptions s where s.provider_subscription_id = provider_subscriptions.id) as period_end_before,
    -- The user the canonical row names: a store's subscription keeps it (see materialise).
    coalesce((select c.user_id from subscriptions s join billing_customers c on c.id = s.billing_customer_id
              where s.provider_subscription_id = provider_subscriptions.id), '') as user_before,
    -- The latest read that found the state as stored (subscription_reads), if any.
    (select r.read_at from subscription_reads r where r.provider_subscription_id = provider_subscriptions.id) as read_at,
    (select r.read_position from subscription_reads r where r.provider_subscription_id = provider_subscriptions.id) as read_position;

-- name: RememberRead :exec
-- A read that found the subscription as stored: its times, kept apart from the row.
insert into subscription_reads (provider_subscription_id, read_at, read_position)
values (sqlc.arg(provider_subscription_id), sqlc.arg(read_at), sqlc.arg(read_position))
on conflict (provider_subscription_id) do update set read_at = excluded.read_at, read_position = excluded.read_position;

-- name: SaveProviderSubscription :exec
update provider_subscriptions
set provider_customer_id = sqlc.narg(provider_customer_id),
    state = sqlc.arg(state),
    last_event_id = sqlc.narg(last_event_id),
    last_event_type = sqlc.narg(last_event_type),
    last_event_at = sqlc.narg(last_event_at),
    paid_through = sqlc.narg(paid_through),
    paid_event_at = sqlc.narg(paid_event_at),
    -- A price is kept until the provider names another: writes that carry none (a
    -- payment, an ended subscription) leave it.
    amount = coalesce(sqlc.narg(amount), amount),
    currency = coalesce(sqlc.narg(currency), currency),
    billing_period = coalesce(sqlc.narg(billing_period), billing_period),
    updated_at = sqlc.arg(now)
where id = sqlc.arg(id);

-- name: UpsertSubscription :execrows
-- The row is written only when something in it changes, so one affected row means the
-- user's billing answer may have changed (and updated_at stays the time it last did).
insert into subscriptions (provider_subscription_id, billing_customer_id, plan_id, provider, status, current_period_end, created_at, updated_at)
values (sqlc.arg(provider_subscription_id), sqlc.arg(billing_customer_id), sqlc.arg(plan_id), sqlc.arg(provider), sqlc.arg(status), sqlc.narg(current_period_end), sqlc.arg(now), sqlc.arg(now))
on conflict (provider_subscription_id) do update
set billing_customer_id = excluded.billing_customer_id,
    plan_id = excluded.plan_id,
    status = excluded.status,
    current_period_end = excluded.current_period_end,
    updated_at = excluded.updated_at
where subscriptions.billing_customer_id <> excluded.billing_customer_id
   or subscriptions.plan_id <> excluded.plan_id
   or subscriptions.status <> excluded.status
   or subscriptions.current_period_end is distinct from excluded.current_period_end;

-- name: ListUserSubscriptions :many
select s.provider_subscription_id, s.provider, s.status, s.current_period_end, s.updated_at, s.id, p.id as plan_id, p.key as plan_key, p.name as plan_name, p.tier as plan_tier
from subscriptions s
join billing_customers c on c.id = s.billing_customer_id
join plans p on p.id = s.plan_id
where c.user_id = sqlc.arg(user_id)
order by s.updated_at desc, s.id desc;

-- name: ListSubscriptionsBeforeChange :many
-- A user's canonical rows and the row of the provider subscription about to be written,
-- whoever's it is, with their users, newest first: the "previous" side of a billing change.
-- Plans come from the catalogue in memory.
select s.provider_subscription_id, s.provider, s.status, s.current_period_end, s.updated_at as updated_at, s.id as id, s.plan_id, c.user_id
from subscriptions s
join billing_customers c on c.id = s.billing_customer_id
where c.user_id = sqlc.arg(user_id)
union all
select s.provider_subscription_id, s.provider, s.status, s.current_period_end, s.updated_at, s.id, s.plan_id, c.user_id
from subscriptions s
join billing_customers c on c.id = s.billing_customer_id
where s.provider_subscription_id = sqlc.arg(provider_subscription_id) and c.user_id <> sqlc.arg(user_id)
order by updated_at desc, id desc;

-- name: UpsertCustomerReadingBefore :one
-- UpsertCustomer for Postgres while changes are watched, just before a canonical write,
-- which also reads, as JSON, what tells whether that write changes the user's answer: the
-- rows ListSubscriptionsBeforeChange reads, and the user's usage counters of every period a
-- position before or after the write can count in: a subscription's period end, or
-- month_end when none governs. The caller holds the provider subscription's row
-- lock, which every writer of its canonical row takes first, so that row is read as it
-- stands until the write; the read spares the write a read of its own, and lets a change's
-- outbox row go with the write (UpsertSubscriptionRecordingChange).
with customer as (
    insert into billing_customers (user_id, created_at, updated_at)
    values (sqlc.arg(user_id), sqlc.arg(now), sqlc.arg(now))
    on conflict (user_id) do update set user_id = excluded.user_id
    returning id, web_customer_id
),
before as (
    select s.provider_subscription_id, s.provider, s.status, s.current_period_end, s.updated_at, s.id, s.plan_id, c.user_id
    from subscriptions s
    join billing_customers c on c.id = s.billing_customer_id
    where c.user_id = sqlc.arg(user_id)
    union all
    select s.provider_subscription_id, s.provider, s.status, s.current_period_end, s.updated_at, s.id, s.plan_id, c.user_id
    from subscriptions s
    join billing_customers c on c.id = s.billing_customer_id
    where s.provider_subscription_id = sqlc.arg(provider_subscription_id) and c.user_id <> sqlc.arg(user_id)
)
select customer.id, customer.web_customer_id,
    (select coalesce(json_agg(json_build_object('ProviderSubscriptionID', b.provider_subscription_id, 'Provider', b.provider,
        'Status', b.status, 'CurrentPeriodEnd', b.current_period_end, 'UpdatedAt', b.updated_at, 'ID', b.id,
        'PlanID', b.plan_id, 'UserID', b.user_id) order by b.updated_at desc, b.id desc), '[]') from before b)::text as subscriptions,
    (select coalesce(json_agg(json_build_object('Name', u.name, 'PeriodEnd', u.period_end, 'Used', u.used)), '[]')
     from usage_counters u
     where u.user_id = sqlc.arg(user_id)
       and (u.period_end = sqlc.arg(month_end)
            or u.period_end = sqlc.narg(current_period_end)
            or u.period_end in (select b.current_period_end from before b where b.user_id = sqlc.arg(user_id))))::text as usage
from customer;

-- name: UpsertSubscriptionRecordingChange :execrows
-- UpsertSubscription and InsertOutboundEvent in one statement, for Postgres: the event is
-- recorded only if the row is written, and the rows affected say whether it was.
with written as (
    insert into subscriptions (provider_subscription_id, billing_customer_id, plan_id, provider, status, current_period_end, created_at, updated_at)
    values (sqlc.arg(provider_subscription_id), sqlc.arg(billing_customer_id), sqlc.arg(plan_id), sqlc.arg(provider), sqlc.arg(status), sqlc.narg(current_period_end), sqlc.arg(now), sqlc.arg(now))
    on conflict (provider_subscription_id) do update
    set billing_customer_id = excluded.billing_customer_id,
        plan_id = excluded.plan_id,
        status = excluded.status,
        current_period_end = excluded.current_period_end,
        updated_at = excluded.updated_at
    where subscriptions.billing_customer_id <> excluded.billing_customer_id
       or subscriptions.plan_id <> excluded.plan_id
       or subscriptions.status <> excluded.status
       or subscriptions.current_period_end is distinct from excluded.current_period_end
    returning 1
)
insert into outbound_new_events (message_id, user_id, event_type, payload, created_at, give_up_at)
select sqlc.arg(message_id), sqlc.arg(user_id), sqlc.arg(event_type), sqlc.arg(payload), sqlc.arg(now), sqlc.arg(give_up_at)
from written;

-- name: UserAnswer :many
-- Everything a user's billing answer is read from, in one read: their subscriptions (kind
-- 'subscription', newest first), their usage counters of every period a position can count
-- in (kind 'usage': a subscription's period end, or month_end when none governs), and one
-- 'version' row, so that the plan catalogue's version comes back even for a new user.
select 'subscription' as kind, s.id as id, s.provider_subscription_id as provider_subscription_id, s.provider as provider,
    s.status as status, s.current_period_end as period_end, s.updated_at as updated_at, s.plan_id as plan_id,
    '' as name, cast(0 as bigint) as used, (select version from plans_version) as plans_version
from subscriptions s
join billing_customers c on c.id = s.billing_customer_id
where c.user_id = sqlc.arg(user_id)
union all
select 'usage', 0, 0, '', '', u.period_end, u.updated_at, 0, u.name, u.used, 0
from usage_counters u
where u.user_id = sqlc.arg(user_id)
  and (u.period_end = sqlc.arg(month_end)
       or u.period_end in (select s.current_period_end from subscriptions s
                           join billing_customers c on c.id = s.billing_customer_id where c.user_id = sqlc.arg(user_id)))
union all
select 'version', 0, 0, '', '', null, sqlc.arg(month_end), 0, '', 0, (select version from plans_version)
order by kind, updated_at desc, id desc;

-- name: GetCustomerByProviderCustomer :one
-- The billing customer a store's customer is linked to: the user of a subscription of that
-- customer's (a store whose customers are not kept on billing_customers, as the web
-- provider's are). The most recent subscription's, should two name different users.
select c.id, c.user_id from provider_subscriptions ps
join subscriptions s on s.provider_subscription_id = ps.id
join billing_customers c on c.id = s.billing_customer_id
where ps.provider = sqlc.arg(provider) and ps.provider_customer_id = sqlc.arg(customer_id)
order by s.updated_at desc, s.id desc
limit 1;

-- name: ProviderCustomerOfUser :one
-- The user's customer at a store, from the user's most recent subscription there.
select ps.provider_customer_id from provider_subscriptions ps
join subscriptions s on s.provider_subscription_id = ps.id
join billing_customers c on c.id = s.billing_customer_id
where c.user_id = sqlc.arg(user_id) and ps.provider = sqlc.arg(provider) and ps.provider_customer_id is not null and ps.provider_customer_id <> ''
order by s.updated_at desc, s.id desc
limit 1;
