-- +goose Up
-- Per provider and environment, the latest read of a store's history: the window asked
-- for, where it wanted to start and why it started later (the store keeps only so much),
-- and, while it is under way, the page it resumes at after an interruption.
create table store_history_reads (
    provider    text not null,
    environment text not null,
    wanted      timestamp not null,
    read_from   timestamp not null,
    read_to     timestamp not null,
    note        text not null default '',
    -- The page the read goes on at ('' for its first); null once the read is complete.
    next_page   text,
    pages       bigint not null default 0,
    updated_at  timestamp not null,
    primary key (provider, environment)
);

-- A reconcile pass's subscriptions whose read failed (left for the next pass), and what it
-- says of the pass as a whole (a store environment that refused), one line each.
alter table reconcile_runs add column failed bigint not null default 0;
alter table reconcile_runs add column notes text not null default '';

-- A read of a store's subscription that found it as stored writes neither its row nor its
-- canonical row: when it was read (exactly) and where it stands among events (its
-- position) are kept here, so that an event older than the read is still older. (Both are
-- set on every row; nullable only so that the row lock reads "no read" as null.)
create table subscription_reads (
    provider_subscription_id bigint primary key references provider_subscriptions (id) on delete cascade,
    read_at       timestamp,
    read_position timestamp
);

-- +goose Down
drop table subscription_reads;
alter table reconcile_runs drop column notes;
alter table reconcile_runs drop column failed;
drop table store_history_reads;
