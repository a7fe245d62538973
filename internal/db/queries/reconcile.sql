-- name: TakeReconcileLease :one
-- The lease is taken when it is free, run out, or already the holder's (a renewal); the
-- row comes back only then.
insert into reconcile_leases (provider, holder, lease_until)
values (sqlc.arg(provider), sqlc.arg(holder), sqlc.arg(lease_until))
on conflict (provider) do update set holder = excluded.holder, lease_until = excluded.lease_until
where reconcile_leases.holder = excluded.holder or reconcile_leases.lease_until < sqlc.arg(now)
returning holder;

-- name: ReleaseReconcileLease :exec
delete from reconcile_leases where provider = sqlc.arg(provider) and holder = sqlc.arg(holder);

-- name: StartReconcileRun :one
insert into reconcile_runs (provider, dry_run, started_at) values (sqlc.arg(provider), sqlc.arg(dry_run), sqlc.arg(now))
returning id;

-- name: FinishReconcileRun :exec
update reconcile_runs
set finished_at = sqlc.arg(now), checked = sqlc.arg(checked), drifted = sqlc.arg(drifted), repaired = sqlc.arg(repaired),
    unresolved = sqlc.arg(unresolved), drift = sqlc.arg(drift), error = sqlc.narg(error)
where id = sqlc.arg(id);

-- name: ListReconcileRuns :many
select id, provider, dry_run, started_at, finished_at, checked, drifted, repaired, unresolved, drift, error
from reconcile_runs order by id desc limit sqlc.arg(max);
