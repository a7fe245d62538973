-- +goose Up
-- Reconciliation: each pass over a provider's API, what it found different from tollgate's
-- state (drift) and what it repaired, for `tollgate reconcile status`.
create table reconcile_runs (
    id          bigint generated always as identity primary key,
    provider    text not null,
    dry_run     boolean not null,
    started_at  timestamptz not null,
    finished_at timestamptz,
    checked     bigint not null default 0,
    drifted     bigint not null default 0,
    repaired    bigint not null default 0,
    unresolved  bigint not null default 0,
    -- Each drifted subscription, before → after, one line each.
    drift       text not null default '',
    error       text
);
create index reconcile_runs_provider on reconcile_runs (provider, id);

-- One process at a time reconciles a provider: the holder of its lease, renewed as the pass
-- goes on; a lease that runs out (a process that died) is taken over.
create table reconcile_leases (
    provider    text primary key,
    holder      text not null,
    lease_until timestamptz not null
);

-- +goose Down
drop table reconcile_leases;
drop table reconcile_runs;
