-- +goose Up
-- A server keeps the service keys it has checked in memory while it listens on
-- tollgate_keys (servicekeys.Keys.ListenForChanges): a revocation anywhere (another
-- server, the CLI) notifies the channel when it commits, and every server forgets them.
-- +goose StatementBegin
create function service_keys_notify() returns trigger language plpgsql as $$
begin
    perform pg_notify('tollgate_keys', '*');
    return null;
end
$$;
-- +goose StatementEnd
create trigger service_keys_notify after delete on service_keys
    for each statement execute function service_keys_notify();

-- +goose Down
drop trigger service_keys_notify on service_keys;
drop function service_keys_notify();
