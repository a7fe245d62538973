-- name: FindWebSession :one
select data from web_sessions where token = sqlc.arg(token) and expiry > sqlc.arg(now);

-- name: UpsertWebSession :exec
insert into web_sessions (token, data, expiry) values (sqlc.arg(token), sqlc.arg(data), sqlc.arg(expiry))
on conflict (token) do update set data = excluded.data, expiry = excluded.expiry;

-- name: DeleteWebSession :exec
delete from web_sessions where token = sqlc.arg(token);

-- name: DeleteExpiredWebSessions :exec
delete from web_sessions where expiry <= sqlc.arg(now);
