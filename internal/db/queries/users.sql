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
