-- +goose Up
-- An unresolved event may name its user (its customer resolved, its plan did not): the
-- console finds it by its subscription too, so the unresolved ones are indexed by
-- subscription whether or not they name a user.
drop index provider_events_subscription;
create index provider_events_subscription on provider_events (subscription_id) where user_id is null or outcome = 'unresolved';

-- +goose Down
drop index provider_events_subscription;
create index provider_events_subscription on provider_events (subscription_id) where user_id is null;
