-- +goose Up
-- tollgate's own signing keys (ES256), for the entitlement tokens apps verify with the
-- public keys at /.well-known/jwks.json. Every instance signs with the same set, read from
-- here. seq is unique so that instances racing to make a key (at first need, or after the
-- signing key was retired) agree on one: the second insert of a step is ignored.
-- private_key is the PKCS#8 DER of the private key, base64: it is protected as the
-- database is, and never leaves it but to sign.
create table signing_keys (
    kid          text primary key,
    seq          bigint not null unique,
    private_key  text not null,
    public_jwk   text not null,
    created_at   timestamp not null,
    -- When it starts signing: at once for the first key and rotate --now, else after the
    -- key set's max-age, so that no verifier with a cached set meets an unknown kid.
    signs_from   timestamp not null,
    -- The latest exp it may have signed (kept a little ahead of the tokens it signs): a key
    -- that stopped signing is published until then.
    signed_until timestamp,
    -- Withdrawn from the set at once (signing-keys retire): its tokens stop verifying.
    retired_at   timestamp
);

-- A server keeps the keys in memory while it polls tollgate_signing_keys: a key made,
-- extended, retired or deleted in any process appends a row in its transaction.
-- +goose StatementBegin
create trigger signing_keys_made after insert on signing_keys
begin
    insert into notifications (channel, payload) values ('tollgate_signing_keys', '*');
end;
-- +goose StatementEnd
-- +goose StatementBegin
create trigger signing_keys_changed after update on signing_keys
begin
    insert into notifications (channel, payload) values ('tollgate_signing_keys', '*');
end;
-- +goose StatementEnd
-- +goose StatementBegin
create trigger signing_keys_deleted after delete on signing_keys
begin
    insert into notifications (channel, payload) values ('tollgate_signing_keys', '*');
end;
-- +goose StatementEnd

-- +goose Down
drop trigger signing_keys_deleted;
drop trigger signing_keys_changed;
drop trigger signing_keys_made;
drop table signing_keys;
