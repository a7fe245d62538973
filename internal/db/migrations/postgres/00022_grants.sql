-- +goose Up
-- Grants are canonical subscriptions of provider 'grant' (their state lives in
-- provider_subscriptions, like any store's). A grant ends by itself, with no event: every
-- instance sweeps for live grants whose end has passed and records their end, found by
-- this index without reading any store's rows.
create index subscriptions_grants_live on subscriptions (current_period_end) where provider = 'grant' and status = 'active';

-- +goose Down
drop index subscriptions_grants_live;
