-- +goose Up
-- Keys for trusted backends (tgk_…). Only the SHA-256 of a key is stored; prefix is its
-- first characters, shown by "keys list" so a key can be recognised.
create table service_keys (
    id           integer primary key,
    name         text not null unique,
    prefix       text not null,
    key_hash     text not null unique,
    created_at   timestamp not null,
    last_used_at timestamp
);

-- +goose Down
drop table service_keys;
