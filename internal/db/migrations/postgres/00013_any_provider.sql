-- +goose Up
-- A provider is whichever adapter tollgate is built with (docs/billing.md, "How billing is
-- built"): the tables no longer list them, so adding a store needs no migration.
alter table provider_events drop constraint if exists provider_events_provider_check;
alter table plan_prices drop constraint if exists plan_prices_provider_check;
alter table provider_subscriptions drop constraint if exists provider_subscriptions_provider_check;
alter table backfill_cursors drop constraint if exists backfill_cursors_provider_check;

-- +goose Down
alter table provider_events add constraint provider_events_provider_check check (provider in ('web', 'mobile'));
alter table plan_prices add constraint plan_prices_provider_check check (provider in ('web', 'mobile'));
alter table provider_subscriptions add constraint provider_subscriptions_provider_check check (provider in ('web', 'mobile'));
alter table backfill_cursors add constraint backfill_cursors_provider_check check (provider in ('web', 'mobile'));
