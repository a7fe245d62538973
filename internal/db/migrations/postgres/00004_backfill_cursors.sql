-- +goose Up
-- Where an interrupted "billing backfill" stopped: the last subscription of the last page
-- it finished, per provider and set of filters (scope), so the same command resumes there.
-- A run that completes deletes its row.
create table backfill_cursors (
    provider       text not null check (provider in ('web', 'mobile')),
    scope          text not null,
    starting_after text not null,
    done           bigint not null,
    created_at     timestamptz not null,
    updated_at     timestamptz not null,
    primary key (provider, scope)
);

-- +goose Down
drop table backfill_cursors;
