-- +goose Up
-- Google Play's events are stored under Google's names of their types
-- (SUBSCRIPTION_PURCHASED), as the console and users show name and filter them, not
-- "subscription.<number>". An unknown number keeps the old name.
update provider_events set event_type = case event_type
    when 'subscription.1' then 'SUBSCRIPTION_RECOVERED'
    when 'subscription.2' then 'SUBSCRIPTION_RENEWED'
    when 'subscription.3' then 'SUBSCRIPTION_CANCELED'
    when 'subscription.4' then 'SUBSCRIPTION_PURCHASED'
    when 'subscription.5' then 'SUBSCRIPTION_ON_HOLD'
    when 'subscription.6' then 'SUBSCRIPTION_IN_GRACE_PERIOD'
    when 'subscription.7' then 'SUBSCRIPTION_RESTARTED'
    when 'subscription.8' then 'SUBSCRIPTION_PRICE_CHANGE_CONFIRMED'
    when 'subscription.9' then 'SUBSCRIPTION_DEFERRED'
    when 'subscription.10' then 'SUBSCRIPTION_PAUSED'
    when 'subscription.11' then 'SUBSCRIPTION_PAUSE_SCHEDULE_CHANGED'
    when 'subscription.12' then 'SUBSCRIPTION_REVOKED'
    when 'subscription.13' then 'SUBSCRIPTION_EXPIRED'
    when 'subscription.19' then 'SUBSCRIPTION_PRICE_CHANGE_UPDATED'
    when 'subscription.20' then 'SUBSCRIPTION_PENDING_PURCHASE_CANCELED'
    else event_type end
where provider = 'playstore' and event_type like 'subscription.%';

-- +goose Down
select 1;
