-- +goose Up
-- A provider is whichever adapter tollgate is built with (docs/billing.md, "How billing is
-- built"): the tables no longer list them, so adding a store needs no migration.
--
-- SQLite cannot drop a CHECK constraint, and rebuilding provider_subscriptions would trip
-- the foreign key of subscriptions. This is the procedure SQLite documents for removing a
-- CHECK constraint (lang_altertable.html, "Making Other Kinds Of Table Schema Changes"):
-- edit the tables' text in sqlite_master, in this migration's transaction. RESET reloads
-- this connection's schema; the table created and dropped after it moves the schema
-- version on, so that every other connection reloads its own.
pragma writable_schema = on;
update sqlite_master set sql = replace(sql, ' check (provider in (''web'', ''mobile''))', '')
where type = 'table' and name in ('provider_events', 'plan_prices', 'provider_subscriptions', 'backfill_cursors');
pragma writable_schema = reset;
create table schema_changed (x);
drop table schema_changed;

-- +goose Down
pragma writable_schema = on;
update sqlite_master set sql = replace(sql, 'provider          text not null', 'provider          text not null check (provider in (''web'', ''mobile''))')
where type = 'table' and name = 'provider_events';
update sqlite_master set sql = replace(sql, 'provider   text not null', 'provider   text not null check (provider in (''web'', ''mobile''))')
where type = 'table' and name = 'plan_prices';
update sqlite_master set sql = replace(sql, 'provider                 text not null', 'provider                 text not null check (provider in (''web'', ''mobile''))')
where type = 'table' and name = 'provider_subscriptions';
update sqlite_master set sql = replace(sql, 'provider       text not null', 'provider       text not null check (provider in (''web'', ''mobile''))')
where type = 'table' and name = 'backfill_cursors';
pragma writable_schema = reset;
create table schema_changed (x);
drop table schema_changed;
