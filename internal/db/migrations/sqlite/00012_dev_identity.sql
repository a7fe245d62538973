-- +goose Up
-- The development identity service (APP_ENV=development without AUTH_URL) keeps its users
-- and its token signing key here, so that user ids, and the billing links made to them,
-- survive a restart, and a token minted by one process ("tollgate dev token") verifies in
-- another. Never used with a real identity service.
create table dev_identity_users (
    id            text primary key,
    email         text not null unique,
    password_hash text not null,
    created_at    timestamp not null
);
create table dev_identity_keys (
    kid         text primary key,
    private_key text not null,
    created_at  timestamp not null
);

-- +goose Down
drop table dev_identity_keys;
drop table dev_identity_users;
