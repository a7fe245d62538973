-- name: ListGrants :many
-- Grants, newest first: every one, or one user's (user_id ''). A grant's stored state is
-- the whole grant.
select ps.state
from provider_subscriptions ps
left join subscriptions s on s.provider_subscription_id = ps.id
left join billing_customers c on c.id = s.billing_customer_id
where ps.provider = 'grant' and ps.last_event_id is not null
  and (c.user_id = sqlc.arg(user_id) or sqlc.arg(user_id) = '')
order by ps.created_at desc, ps.id desc
limit sqlc.arg(max);

-- name: GetGrant :one
select state from provider_subscriptions
where provider = 'grant' and provider_subscription_id = sqlc.arg(grant_id) and last_event_id is not null;

-- name: GrantsDue :many
-- Live grants whose end has passed: the sweep records their ends, oldest first.
select ps.state
from subscriptions s
join provider_subscriptions ps on ps.id = s.provider_subscription_id
where s.provider = 'grant' and s.status = 'active' and s.current_period_end <= sqlc.arg(now)
order by s.current_period_end
limit 100;

-- name: NextGrantEnd :many
-- When the next live grant ends, if any does: when the sweep looks next.
select current_period_end from subscriptions
where provider = 'grant' and status = 'active'
order by current_period_end
limit 1;

-- name: LivePlanExists :one
-- Whether a plan of the plans file (not archived) has this key: what a grant may give.
select count(*) from plans where key = sqlc.arg(key) and archived_at is null;
