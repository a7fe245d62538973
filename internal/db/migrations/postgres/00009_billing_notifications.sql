-- +goose Up
-- Instances keep users' billing answers in memory. Whatever writes what an answer is made of
-- (a webhook on any instance, a replay, a backfill, usage, a plans sync) notifies the
-- channel tollgate_billing in its transaction, delivered when it commits: the payload is the
-- user whose answer may have changed, or '*' for everyone. Triggers, so that no writer can
-- forget.
-- +goose StatementBegin
create function tollgate_notify_billing() returns trigger language plpgsql as $$
begin
    if tg_table_name = 'subscriptions' then
        perform pg_notify('tollgate_billing', c.user_id) from billing_customers c where c.id = new.billing_customer_id;
        if tg_op = 'UPDATE' and old.billing_customer_id <> new.billing_customer_id then
            -- the subscription moved to another customer: its former user's answer changes too
            perform pg_notify('tollgate_billing', c.user_id) from billing_customers c where c.id = old.billing_customer_id;
        end if;
    elsif tg_table_name = 'usage_counters' then
        perform pg_notify('tollgate_billing', new.user_id);
    else
        perform pg_notify('tollgate_billing', '*');
    end if;
    return null;
end
$$;
-- +goose StatementEnd
create trigger subscriptions_notify_billing after insert or update on subscriptions
    for each row execute function tollgate_notify_billing();
create trigger usage_counters_notify_billing after insert or update on usage_counters
    for each row execute function tollgate_notify_billing();
create trigger plans_version_notify_billing after update on plans_version
    for each statement execute function tollgate_notify_billing();

-- +goose Down
drop trigger plans_version_notify_billing on plans_version;
drop trigger usage_counters_notify_billing on usage_counters;
drop trigger subscriptions_notify_billing on subscriptions;
drop function tollgate_notify_billing();
