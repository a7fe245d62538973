-- +goose Up
-- SQLite has no LISTEN/NOTIFY, yet a running server keeps users' billing answers in memory
-- and must learn of another process's writes (a CLI replay, a plans sync, a second server).
-- The same writes that notify tollgate_billing on Postgres append a row here, in their
-- transaction, so a row exists exactly when the write committed; every server polls for
-- rows past the last one it read (db.Listen). The payload is the user whose answer may have
-- changed, or '*' for everyone.
--
-- seq is the rowid without AUTOINCREMENT: one more than the largest, and the largest is never
-- deleted, so the sequence has no gaps. The log keeps the last 1024 rows, pruned every 128th
-- insert; a reader that finds a gap after its last row has missed some and starts afresh.
create table notifications (
    seq     integer primary key,
    channel text not null,
    payload text not null
);

-- +goose StatementBegin
create trigger notifications_prune after insert on notifications when new.seq % 128 = 0
begin
    delete from notifications where seq <= new.seq - 1024;
end;
-- +goose StatementEnd
-- +goose StatementBegin
create trigger subscriptions_notify_billing_insert after insert on subscriptions
begin
    insert into notifications (channel, payload)
    select 'tollgate_billing', c.user_id from billing_customers c where c.id = new.billing_customer_id;
end;
-- +goose StatementEnd
-- +goose StatementBegin
-- A subscription that moved to another customer changes its former user's answer too.
create trigger subscriptions_notify_billing_update after update on subscriptions
begin
    insert into notifications (channel, payload)
    select 'tollgate_billing', c.user_id from billing_customers c
    where c.id = new.billing_customer_id or c.id = old.billing_customer_id;
end;
-- +goose StatementEnd
-- +goose StatementBegin
create trigger usage_counters_notify_billing_insert after insert on usage_counters
begin
    insert into notifications (channel, payload) values ('tollgate_billing', new.user_id);
end;
-- +goose StatementEnd
-- +goose StatementBegin
create trigger usage_counters_notify_billing_update after update on usage_counters
begin
    insert into notifications (channel, payload) values ('tollgate_billing', new.user_id);
end;
-- +goose StatementEnd
-- +goose StatementBegin
create trigger plans_version_notify_billing after update on plans_version
begin
    insert into notifications (channel, payload) values ('tollgate_billing', '*');
end;
-- +goose StatementEnd

-- +goose Down
drop trigger plans_version_notify_billing;
drop trigger usage_counters_notify_billing_update;
drop trigger usage_counters_notify_billing_insert;
drop trigger subscriptions_notify_billing_update;
drop trigger subscriptions_notify_billing_insert;
drop trigger notifications_prune;
drop table notifications;
