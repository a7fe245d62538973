-- +goose Up
-- How long a one-time purchase of a mobile product entitles for (the plans file's
-- `lasts`), in seconds; null: the product has none.
alter table plan_prices add column lasts_seconds bigint;

-- +goose Down
alter table plan_prices drop column lasts_seconds;
