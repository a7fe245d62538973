-- +goose Up
-- Every change writes an outbox row in ingestion's transaction, so each index on it is paid
-- for by ingestion. A message id is 128 random bits, unique by construction; no query looks
-- one up, so its unique index went unused but on every insert and delivery. Ids need no
-- AUTOINCREMENT (and its sqlite_sequence write per row): a new rowid is above every
-- existing one, which is all the per-user order needs.
create table outbound_deliveries_new (
    id              integer primary key,
    message_id      text not null,
    user_id         text not null,
    event_type      text not null,
    -- The exact bytes that are signed and sent, on every attempt.
    payload         text not null,
    status          text not null check (status in ('pending', 'delivered', 'failed')),
    attempts        integer not null default 0,
    next_attempt_at timestamp not null,
    -- Set while an instance is delivering it; a lease that ran out (a crash) frees it.
    lease_until     timestamp,
    give_up_at      timestamp not null,
    last_error      text,
    created_at      timestamp not null,
    delivered_at    timestamp
);
insert into outbound_deliveries_new select * from outbound_deliveries;
drop table outbound_deliveries;
alter table outbound_deliveries_new rename to outbound_deliveries;
create index outbound_deliveries_pending on outbound_deliveries (user_id, id) where status = 'pending';
create index outbound_deliveries_due on outbound_deliveries (next_attempt_at) where status = 'pending';

-- +goose Down
create table outbound_deliveries_old (
    id              integer primary key autoincrement,
    message_id      text not null unique,
    user_id         text not null,
    event_type      text not null,
    payload         text not null,
    status          text not null check (status in ('pending', 'delivered', 'failed')),
    attempts        integer not null default 0,
    next_attempt_at timestamp not null,
    lease_until     timestamp,
    give_up_at      timestamp not null,
    last_error      text,
    created_at      timestamp not null,
    delivered_at    timestamp
);
insert into outbound_deliveries_old select * from outbound_deliveries;
drop table outbound_deliveries;
alter table outbound_deliveries_old rename to outbound_deliveries;
create index outbound_deliveries_pending on outbound_deliveries (user_id, id) where status = 'pending';
create index outbound_deliveries_due on outbound_deliveries (next_attempt_at) where status = 'pending';
