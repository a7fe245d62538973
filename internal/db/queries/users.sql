-- name: UserCustomers :many
select id, web_customer_id, created_at from billing_customers where user_id = sqlc.arg(user_id) order by id;

-- name: UserSubscriptions :many
-- The last event's type is the stored event's own (Google Play's SUBSCRIPTION_RENEWED),
-- not the type its state was recorded under (a read of Google's API): tollgate.backfill
-- only for a read that no event brought.
select ps.provider, ps.provider_subscription_id, s.status, s.current_period_end, p.key as plan_key,
       ps.last_event_id, coalesce(le.event_type, ps.last_event_type, '') as last_event_type, ps.last_event_at
from subscriptions s
join billing_customers c on c.id = s.billing_customer_id
join provider_subscriptions ps on ps.id = s.provider_subscription_id
join plans p on p.id = s.plan_id
left join provider_events le on le.provider = ps.provider and le.provider_event_id = ps.last_event_id
where c.user_id = sqlc.arg(user_id)
order by s.updated_at desc, s.id desc;
