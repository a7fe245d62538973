-- +goose Up
-- Per provider and environment, the time up to which tollgate holds every notification the
-- store sent: the end of its last complete read of the store's history. The next read
-- starts a margin before it.
create table store_history (
    provider       text not null,
    environment    text not null,
    complete_until timestamptz not null,
    updated_at     timestamptz not null,
    primary key (provider, environment)
);

-- +goose Down
drop table store_history;
