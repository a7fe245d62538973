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
    unresolved = sqlc.arg(unresolved), failed = sqlc.arg(failed), drift = sqlc.arg(drift), notes = sqlc.arg(notes)
where id = sqlc.arg(id);

-- name: FinishReconcileRun :exec
update reconcile_runs
set finished_at = sqlc.arg(now), checked = sqlc.arg(checked), drifted = sqlc.arg(drifted), repaired = sqlc.arg(repaired),
    unresolved = sqlc.arg(unresolved), failed = sqlc.arg(failed), drift = sqlc.arg(drift), notes = sqlc.arg(notes),
    error = sqlc.narg(error), interrupted = sqlc.arg(interrupted)
where id = sqlc.arg(id);

-- name: LastReconcilePassEnd :one
-- When the provider's newest pass that counts for the schedule ended: any process's, not a
-- dry run, not interrupted (a failed pass counts). No row: none has yet.
select finished_at from reconcile_runs
where provider = sqlc.arg(provider) and not dry_run and not interrupted and finished_at is not null
order by finished_at desc limit 1;

-- name: ListReconcileRuns :many
select id, provider, dry_run, started_at, finished_at, checked, drifted, repaired, unresolved, failed, drift, notes, error, interrupted
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

-- name: GetHistoryRead :one
select wanted, read_from, read_to, note, next_page, pages from store_history_reads
where provider = sqlc.arg(provider) and environment = sqlc.arg(environment);

-- name: StartHistoryRead :exec
insert into store_history_reads (provider, environment, wanted, read_from, read_to, note, next_page, pages, updated_at)
values (sqlc.arg(provider), sqlc.arg(environment), sqlc.arg(wanted), sqlc.arg(read_from), sqlc.arg(read_to), sqlc.arg(note), '', 0, sqlc.arg(now))
on conflict (provider, environment) do update set wanted = excluded.wanted, read_from = excluded.read_from, read_to = excluded.read_to,
    note = excluded.note, next_page = excluded.next_page, pages = excluded.pages, updated_at = excluded.updated_at;

-- name: HistoryReadPageDone :exec
-- A page applied: the read goes on at next_page (null: it is complete).
update store_history_reads set next_page = sqlc.narg(next_page), pages = pages + 1, updated_at = sqlc.arg(now)
where provider = sqlc.arg(provider) and environment = sqlc.arg(environment);

-- name: ListHistoryReads :many
select r.provider, r.environment, r.wanted, r.read_from, r.read_to, r.note, r.next_page, r.pages, r.updated_at, h.complete_until
from store_history_reads r
left join store_history h on h.provider = r.provider and h.environment = r.environment
order by r.provider, r.environment;

-- name: InterruptStaleReconcileRuns :exec
-- Under the provider's lease no pass of it runs but the holder's: one left unfinished was
-- cut short by a process that died.
update reconcile_runs set interrupted = true, finished_at = sqlc.arg(now)
where provider = sqlc.arg(provider) and finished_at is null;

-- name: LastReconcileRun :one
-- The provider's newest pass that was not a dry run, whatever became of it.
select finished_at, interrupted from reconcile_runs
where provider = sqlc.arg(provider) and not dry_run order by id desc limit 1;

-- name: ReconcileLeaseHeld :one
-- Whether a live lease of the key is held (at now).
select count(*) from reconcile_leases where provider = sqlc.arg(provider) and lease_until >= sqlc.arg(now);
