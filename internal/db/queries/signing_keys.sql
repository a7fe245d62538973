-- name: ListSigningKeys :many
-- Every signing key, oldest first.
select kid, seq, private_key, public_jwk, created_at, signs_from, signed_until, retired_at
from signing_keys order by seq;

-- name: AddSigningKey :execrows
-- A key at step seq; nothing when another process made that step's key first.
insert into signing_keys (kid, seq, private_key, public_jwk, created_at, signs_from)
values (sqlc.arg(kid), sqlc.arg(seq), sqlc.arg(private_key), sqlc.arg(public_jwk), sqlc.arg(now), sqlc.arg(signs_from))
on conflict (seq) do nothing;

-- name: ExtendSigningKey :exec
-- The key kid may have signed tokens until signed_until; it never moves back.
update signing_keys set signed_until = sqlc.arg(signed_until)
where kid = sqlc.arg(kid) and (signed_until is null or signed_until < sqlc.arg(signed_until));

-- name: RetireSigningKey :execrows
update signing_keys set retired_at = sqlc.arg(now) where kid = sqlc.arg(kid) and retired_at is null;
