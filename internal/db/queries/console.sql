-- The operator console's reads. Its charts' daily counts, which need an engine's own date
-- arithmetic, are in internal/console/days.sql.

-- name: ConsoleSubscriptions :many
-- Every canonical subscription with its user, plan and price: the overview's and the plans
-- page's counts of people and MRR are worked out from these (tens of thousands of rows at
-- most).
select c.user_id, s.provider, s.status, s.current_period_end, p.key as plan_key, ps.amount, ps.currency, ps.billing_period
from subscriptions s
join billing_customers c on c.id = s.billing_customer_id
join plans p on p.id = s.plan_id
join provider_subscriptions ps on ps.id = s.provider_subscription_id;

-- name: DeleteBillingDay :exec
delete from billing_days where day = sqlc.arg(day);

-- name: InsertBillingDay :exec
insert into billing_days (day, provider, plan_key, currency, subscribers, unpriced, mrr_minor)
values (sqlc.arg(day), sqlc.arg(provider), sqlc.arg(plan_key), sqlc.arg(currency), sqlc.arg(subscribers), sqlc.arg(unpriced), sqlc.arg(mrr_minor));

-- name: ListBillingDays :many
select day, provider, plan_key, currency, subscribers, unpriced, mrr_minor
from billing_days where day >= sqlc.arg(since) order by day;

-- name: SearchKnownUsers :many
-- By the start of the e-mail address; pattern is lower-case and ends in %.
select user_id, email from known_users
where lower(email) like CAST(sqlc.arg(pattern) AS text) escape '\'
order by email limit 50;

-- name: RecentCustomers :many
-- The users most recently seen signing in or made customers by a billing event, newest
-- first. Each table holds a user once, so the 50 newest of both are among each table's 50
-- newest (by the same order): two index walks of 50 rows, not a sort of every user.
select user_id from (
    select * from (
        select user_id, last_seen as seen from known_users order by last_seen desc, user_id limit 50
    ) signed_in
    union all
    select * from (
        select user_id, updated_at as seen from billing_customers order by updated_at desc, user_id limit 50
    ) customers
) recent
group by user_id
order by max(seen) desc, user_id
limit 50;

-- name: GetKnownUser :one
select user_id, email from known_users where user_id = sqlc.arg(user_id);

-- name: UsersByProviderID :many
-- The users one provider's customer, subscription (an App Store original transaction) or
-- event id leads to: through the canonical rows, or through an unresolved event that
-- names its user (a subscription whose plan never resolved has no canonical row). Each
-- part is a lookup in a key that starts with the provider, so the console asks once per
-- provider.
select c.user_id from billing_customers c where sqlc.arg(provider) = 'web' and c.web_customer_id = sqlc.arg(id)
union
select c.user_id from provider_subscriptions ps
join subscriptions s on s.provider_subscription_id = ps.id
join billing_customers c on c.id = s.billing_customer_id
where ps.provider = sqlc.arg(provider) and ps.provider_subscription_id = sqlc.arg(id)
union
select c.user_id from provider_subscriptions ps
join subscriptions s on s.provider_subscription_id = ps.id
join billing_customers c on c.id = s.billing_customer_id
where ps.provider = sqlc.arg(provider) and ps.provider_customer_id = sqlc.arg(id)
union
select e.user_id from provider_events e
where e.provider = sqlc.arg(provider) and e.provider_event_id = sqlc.arg(id) and e.user_id is not null
union
select e.user_id from provider_events e
where e.subscription_id = sqlc.arg(id) and e.provider = sqlc.arg(provider) and e.outcome = 'unresolved' and e.user_id is not null
limit 50;

-- name: CustomerSubscriptions :many
-- The last event's type as users show gives it (UserSubscriptions): the stored event's own.
select ps.provider, ps.provider_subscription_id, ps.provider_customer_id, s.status, s.current_period_end, p.key as plan_key, p.name as plan_name,
       ps.amount, ps.currency, ps.billing_period, coalesce(le.event_type, ps.last_event_type, '') as last_event_type, ps.last_event_at, s.updated_at
from subscriptions s
join billing_customers c on c.id = s.billing_customer_id
join provider_subscriptions ps on ps.id = s.provider_subscription_id
join plans p on p.id = s.plan_id
left join provider_events le on le.provider = ps.provider and le.provider_event_id = ps.last_event_id
where c.user_id = sqlc.arg(user_id)
order by s.updated_at desc, s.id desc;

-- name: CustomerTimeline :many
-- The events that name the user (resolved to them, or unresolved with their customer
-- resolved), those that moved a subscription away from them, and those that name nobody
-- but one of the user's subscriptions, newest first: three index lookups. The console's
-- timeline and "users show" both list these.
select e.id, e.provider, e.provider_event_id, e.event_type, e.received_at, e.processed_at, e.outcome, e.processing_error, e.subscription_id,
       e.plan_before, e.status_before, e.period_end_before, e.plan_after, e.status_after, e.period_end_after
from provider_events e
where e.user_id = sqlc.arg(user_id)
union
select e.id, e.provider, e.provider_event_id, e.event_type, e.received_at, e.processed_at, e.outcome, e.processing_error, e.subscription_id,
       e.plan_before, e.status_before, e.period_end_before, e.plan_after, e.status_after, e.period_end_after
from provider_events e
where e.moved_from_user_id = sqlc.arg(user_id)
union
select e.id, e.provider, e.provider_event_id, e.event_type, e.received_at, e.processed_at, e.outcome, e.processing_error, e.subscription_id,
       e.plan_before, e.status_before, e.period_end_before, e.plan_after, e.status_after, e.period_end_after
from provider_events e
join provider_subscriptions ps on ps.provider_subscription_id = e.subscription_id and ps.provider = e.provider
join subscriptions s on s.provider_subscription_id = ps.id
join billing_customers c on c.id = s.billing_customer_id
where e.user_id is null and c.user_id = sqlc.arg(user_id)
order by received_at desc, provider_event_id desc
limit sqlc.arg(max) offset sqlc.arg(skip);

-- name: CustomerDeliveries :many
select id, event_type, status, attempts, last_error, created_at, payload
from outbound_deliveries where user_id = sqlc.arg(user_id)
order by id desc limit 500;

-- name: GetEventByRowID :one
select id, provider, provider_event_id, event_type, payload, received_at, outcome, processing_error, user_id
from provider_events where id = sqlc.arg(id);

-- name: CountProblemEvents :one
-- The events that need a hand (unresolved, or refused as invalid) among those the filters
-- match, counted up to up_to; empty filters match all. The console lists these first, and
-- counts them only to page past them, so never more than the page's offset.
select count(*) from (
    select 1 from provider_events
    where outcome in ('unresolved', 'invalid')
      and (sqlc.arg(provider) = '' or provider = sqlc.arg(provider))
      and (sqlc.arg(event_type) = '' or event_type = sqlc.arg(event_type))
      and (sqlc.arg(outcome) = '' or outcome = sqlc.arg(outcome))
      and received_at >= sqlc.arg(since)
    limit sqlc.arg(up_to)
) problems;

-- name: ListProblemEvents :many
select id, provider, provider_event_id, event_type, received_at, outcome, processing_error, user_id
from provider_events
where outcome in ('unresolved', 'invalid')
  and (sqlc.arg(provider) = '' or provider = sqlc.arg(provider))
  and (sqlc.arg(event_type) = '' or event_type = sqlc.arg(event_type))
  and (sqlc.arg(outcome) = '' or outcome = sqlc.arg(outcome))
  and received_at >= sqlc.arg(since)
order by received_at desc, id
limit sqlc.arg(max) offset sqlc.arg(skip);

-- name: ListOtherEvents :many
-- The rest, newest first: an index walk by time, never a sort of every event.
select id, provider, provider_event_id, event_type, received_at, outcome, processing_error, user_id
from provider_events
where (outcome is null or outcome not in ('unresolved', 'invalid'))
  and (sqlc.arg(provider) = '' or provider = sqlc.arg(provider))
  and (sqlc.arg(event_type) = '' or event_type = sqlc.arg(event_type))
  and (sqlc.arg(outcome) = '' or outcome = sqlc.arg(outcome))
  and received_at >= sqlc.arg(since)
order by received_at desc, id
limit sqlc.arg(max) offset sqlc.arg(skip);

