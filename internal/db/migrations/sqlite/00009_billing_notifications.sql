-- +goose Up
-- Postgres notifies other instances of billing changes with triggers (its 00009). SQLite has
-- no notifications: an instance learns of its own writes directly, and of another process's
-- (a CLI replay, say) when its cached answers expire. Kept so both engines number alike.
select 1;

-- +goose Down
select 1;
