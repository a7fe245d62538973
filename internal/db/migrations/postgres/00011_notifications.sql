-- +goose Up
-- SQLite keeps a notifications table for what Postgres sends with NOTIFY (its 00009 and
-- 00011). Kept so both engines number alike.
select 1;

-- +goose Down
select 1;
