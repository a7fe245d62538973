-- name: CreateServiceKey :exec
insert into service_keys (name, prefix, key_hash, created_at)
values (sqlc.arg(name), sqlc.arg(prefix), sqlc.arg(key_hash), sqlc.arg(now));

-- name: ListServiceKeys :many
select name, prefix, created_at, last_used_at from service_keys order by name;

-- name: DeleteServiceKey :execrows
delete from service_keys where name = sqlc.arg(name);

-- name: FindServiceKey :one
select id, name, last_used_at from service_keys where key_hash = sqlc.arg(key_hash);

-- name: TouchServiceKey :exec
update service_keys set last_used_at = sqlc.arg(now) where id = sqlc.arg(id);
