-- name: UpsertKnownUser :exec
insert into known_users (user_id, email, first_seen, last_seen)
values (sqlc.arg(user_id), sqlc.arg(email), sqlc.arg(now), sqlc.arg(now))
on conflict (user_id) do update set email = excluded.email, last_seen = excluded.last_seen;
