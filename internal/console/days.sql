-- The overview's daily counts over the last days, by a day and one more column. {{day X}}
-- is the engine's expression for the UTC date (YYYY-MM-DD) of the timestamp X; $1 is the
-- first instant counted.

-- name: new
select {{day created_at}} as day, provider, count(*) from subscriptions
where created_at >= $1 group by 1, 2;

-- name: churned
-- Moved to expired or refunded that day, from a state that was neither.
select {{day received_at}} as day, provider, count(*) from provider_events
where received_at >= $1 and outcome = 'applied' and status_after in ('expired', 'refunded')
  and (status_before is null or status_before not in ('expired', 'refunded'))
group by 1, 2;

-- name: webhooks
-- An event that can never be processed (invalid) is an error.
select {{day received_at}} as day, case when outcome = 'invalid' then 'error' else coalesce(outcome, 'unknown') end, count(*) from provider_events
where received_at >= $1 group by 1, 2;

-- name: deliveries
select {{day created_at}} as day, case when status = 'pending' then 'retrying' else status end, count(*)
from outbound_deliveries where created_at >= $1 group by 1, 2;
