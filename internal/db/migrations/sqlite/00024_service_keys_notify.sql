-- +goose Up
-- A server keeps the service keys it has checked in memory while it polls tollgate_keys
-- (servicekeys.Keys.ListenForChanges): a revocation in any process appends a row in its
-- transaction, and every server forgets them when it reads it.
-- +goose StatementBegin
create trigger service_keys_notify after delete on service_keys
begin
    insert into notifications (channel, payload) values ('tollgate_keys', '*');
end;
-- +goose StatementEnd

-- +goose Down
drop trigger service_keys_notify;
