-- +goose Up
-- The same schema as migrations/postgres, in SQLite's dialect: timestamp for timestamptz
-- (values are always written in UTC), text for jsonb and uuid, integer primary keys.
create table provider_events (
    id                text primary key default (lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' ||
                          substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) ||
                          substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))),
    provider          text not null check (provider in ('web', 'mobile')),
    provider_event_id text not null,
    event_type        text not null,
    payload           text not null default '{}',
    received_at       timestamp not null,
    processed_at      timestamp,
    processing_error  text,
    created_at        timestamp not null,
    updated_at        timestamp not null
);
create unique index provider_events_provider_event_id on provider_events (provider, provider_event_id);
create index provider_events_processed on provider_events (provider, processed_at);

create table plans (
    id          integer primary key,
    key         text not null unique,
    name        text not null,
    tier        integer not null,
    is_default  boolean not null default false,
    archived_at timestamp,
    created_at  timestamp not null,
    updated_at  timestamp not null
);

create table entitlements (
    id         integer primary key,
    name       text not null unique,
    created_at timestamp not null
);

create table plan_entitlements (
    plan_id        integer not null references plans (id),
    entitlement_id integer not null references entitlements (id),
    value          text not null,
    primary key (plan_id, entitlement_id)
);

create table usage_limits (
    plan_id        integer not null references plans (id),
    entitlement_id integer not null references entitlements (id),
    limit_value    integer not null,
    primary key (plan_id, entitlement_id)
);

create table plan_prices (
    provider   text not null check (provider in ('web', 'mobile')),
    price_id   text not null,
    plan_id    integer not null references plans (id),
    created_at timestamp not null,
    primary key (provider, price_id)
);

create table billing_customers (
    id              integer primary key,
    user_id         text not null unique,
    web_customer_id text unique,
    created_at      timestamp not null,
    updated_at      timestamp not null
);

create table provider_subscriptions (
    id                       integer primary key,
    provider                 text not null check (provider in ('web', 'mobile')),
    provider_subscription_id text not null,
    provider_customer_id     text,
    state                    text not null default '{}',
    last_event_id            text,
    last_event_type          text,
    last_event_at            timestamp,
    paid_through             timestamp,
    paid_event_at            timestamp,
    created_at               timestamp not null,
    updated_at               timestamp not null,
    unique (provider, provider_subscription_id)
);

create table subscriptions (
    id                       integer primary key,
    provider_subscription_id integer not null unique references provider_subscriptions (id),
    billing_customer_id      integer not null references billing_customers (id),
    plan_id                  integer not null references plans (id),
    provider                 text not null,
    status                   text not null check (status in ('active', 'trialing', 'past_due', 'cancelled', 'expired', 'refunded')),
    current_period_end       timestamp,
    created_at               timestamp not null,
    updated_at               timestamp not null
);
create index subscriptions_billing_customer on subscriptions (billing_customer_id);

create table usage_counters (
    user_id    text not null,
    name       text not null,
    period_end timestamp not null,
    used       integer not null,
    created_at timestamp not null,
    updated_at timestamp not null,
    primary key (user_id, name, period_end)
);

-- +goose Down
drop table usage_counters;
drop table subscriptions;
drop table provider_subscriptions;
drop table billing_customers;
drop table plan_prices;
drop table usage_limits;
drop table plan_entitlements;
drop table entitlements;
drop table plans;
drop table provider_events;
