-- +goose Up
-- A plan's web prices in the order the plans file lists them: a checkout without a price
-- takes the first.
alter table plan_prices add column position integer not null default 0;

-- +goose Down
alter table plan_prices drop column position;
