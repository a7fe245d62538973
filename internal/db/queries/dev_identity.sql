-- name: DevIdentityKey :one
-- The oldest key signs: two processes that created one at once agree on the first.
select kid, private_key from dev_identity_keys order by created_at, kid limit 1;

-- name: AddDevIdentityKey :exec
insert into dev_identity_keys (kid, private_key, created_at)
values (sqlc.arg(kid), sqlc.arg(private_key), sqlc.arg(now));

-- name: DevIdentityUserByEmail :one
select id, email, password_hash, created_at from dev_identity_users where email = sqlc.arg(email);

-- name: DevIdentityUserByID :one
select id, email, password_hash, created_at from dev_identity_users where id = sqlc.arg(id);

-- name: AddDevIdentityUser :execrows
-- Zero rows when the address is taken (by a concurrent sign-up, say).
insert into dev_identity_users (id, email, password_hash, created_at)
values (sqlc.arg(id), sqlc.arg(email), sqlc.arg(password_hash), sqlc.arg(now))
on conflict (email) do nothing;

-- name: SetDevIdentityPassword :exec
update dev_identity_users set password_hash = sqlc.arg(password_hash) where id = sqlc.arg(id);

-- name: DevStandInState :one
-- What a development stand-in for a store's API was last told (dev_standins).
select state from dev_standins where name = sqlc.arg(name);

-- name: SaveDevStandInState :exec
insert into dev_standins (name, state, updated_at) values (sqlc.arg(name), sqlc.arg(state), sqlc.arg(now))
on conflict (name) do update set state = excluded.state, updated_at = excluded.updated_at;
