-- +goose Up
-- The development stand-ins for the stores' APIs (Google Play's, Paddle's) keep what they
-- were told here, one JSON document each, so that a serve restarted in development still
-- knows every purchase it reported. Never used outside development.
create table dev_standins (
    name       text primary key,
    state      text not null,
    updated_at timestamptz not null
);

-- +goose Down
drop table dev_standins;
