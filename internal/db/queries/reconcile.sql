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

-- name: RecordReconcileProgress :exec
-- A running pass's counts after each page, so that a pass cut short says how far it got.
update reconcile_runs
set checked = sqlc.arg(checked), drifted = sqlc.arg(drifted), repaired = sqlc.arg(repaired),
    unresolved = sqlc.arg(unresolved), drift = sqlc.arg(drift)
where id = sqlc.arg(id);

-- name: FinishReconcileRun :exec
update reconcile_runs
set finished_at = sqlc.arg(now), checked = sqlc.arg(checked), drifted = sqlc.arg(drifted), repaired = sqlc.arg(repaired),
    unresolved = sqlc.arg(unresolved), drift = sqlc.arg(drift), error = sqlc.narg(error), interrupted = sqlc.arg(interrupted)
where id = sqlc.arg(id);

-- name: LastReconcilePassEnd :one
-- When the provider's newest pass that counts for the schedule ended: any process's, not a
-- dry run, not interrupted (a failed pass counts). No row: none has yet.
select finished_at from reconcile_runs
where provider = sqlc.arg(provider) and not dry_run and not interrupted and finished_at is not null
order by finished_at desc limit 1;

-- name: ListReconcileRuns :many
select id, provider, dry_run, started_at, finished_at, checked, drifted, repaired, unresolved, drift, error, interrupted
from reconcile_runs order by id desc limit sqlc.arg(max);

-- name: GetStoreHistory :one
select complete_until from store_history where provider = sqlc.arg(provider) and environment = sqlc.arg(environment);

-- name: SetStoreHistory :exec
insert into store_history (provider, environment, complete_until, updated_at)
values (sqlc.arg(provider), sqlc.arg(environment), sqlc.arg(complete_until), sqlc.arg(now))
on conflict (provider, environment) do update set complete_until = excluded.complete_until, updated_at = excluded.updated_at;

-- name: EarliestProviderEvent :one
-- When the provider's earliest stored event was received; no row when none is stored.
select received_at from provider_events where provider = sqlc.arg(provider) order by received_at limit 1;

-- name: ListStoreSubscriptions :many
-- A provider's subscriptions after a cursor, by id, with their stored state, except those
-- whose canonical row says they ended before since (nothing is left to repair, and a
-- store stops answering for them); one without a canonical row (unresolved) is read too.
select ps.provider_subscription_id, ps.state
from provider_subscriptions ps
left join subscriptions s on s.provider_subscription_id = ps.id
where ps.provider = sqlc.arg(provider) and ps.provider_subscription_id > sqlc.arg(after)
  and (s.current_period_end is null or s.current_period_end >= sqlc.arg(since))
order by ps.provider_subscription_id
limit sqlc.arg(max);
