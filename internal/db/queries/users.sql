-- name: UserCustomers :many
select id, web_customer_id, created_at from billing_customers where user_id = sqlc.arg(user_id) order by id;

-- name: UserSubscriptions :many
select ps.provider, ps.provider_subscription_id, s.status, s.current_period_end, p.key as plan_key,
       ps.last_event_id, ps.last_event_type, ps.last_event_at
from subscriptions s
join billing_customers c on c.id = s.billing_customer_id
join provider_subscriptions ps on ps.id = s.provider_subscription_id
join plans p on p.id = s.plan_id
where c.user_id = sqlc.arg(user_id)
order by s.updated_at desc, s.id desc;

-- name: UserRecentEvents :many
-- The newest events that name the user or one of their provider subscriptions: a text
-- search of the payloads, fine for an operator's command, too slow for a request path.
select e.provider, e.provider_event_id, e.event_type, e.received_at, e.processed_at, e.processing_error
from provider_events e
where CAST(e.payload AS text) like '%' || sqlc.arg(user_id) || '%'
   or exists (
       select 1
       from provider_subscriptions ps
       join subscriptions s on s.provider_subscription_id = ps.id
       join billing_customers c on c.id = s.billing_customer_id
       where c.user_id = sqlc.arg(user_id) and ps.provider = e.provider
         and CAST(e.payload AS text) like '%' || ps.provider_subscription_id || '%')
order by e.received_at desc, e.provider_event_id desc
limit 10;
