-- +goose Up
-- One row per verified webhook delivery. A repeat delivery rewrites the row but
-- keeps received_at.
create table provider_events (
    id                uuid primary key default gen_random_uuid(),
    provider          text not null check (provider in ('web', 'mobile')),
    provider_event_id text not null,
    event_type        text not null,
    payload           jsonb not null default '{}',
    received_at       timestamptz not null,
    processed_at      timestamptz,
    processing_error  text,
    created_at        timestamptz not null,
    updated_at        timestamptz not null
);
create unique index provider_events_provider_event_id on provider_events (provider, provider_event_id);
create index provider_events_processed on provider_events (provider, processed_at);

-- Plans in tier order (the order of the plans file); archived, never deleted.
create table plans (
    id          bigint generated always as identity primary key,
    key         text not null unique,
    name        text not null,
    tier        integer not null,
    is_default  boolean not null default false,
    archived_at timestamptz,
    created_at  timestamptz not null,
    updated_at  timestamptz not null
);

create table entitlements (
    id         bigint generated always as identity primary key,
    name       text not null unique,
    created_at timestamptz not null
);

-- value is the JSON scalar from the plans file: true/false or a number.
create table plan_entitlements (
    plan_id        bigint not null references plans (id),
    entitlement_id bigint not null references entitlements (id),
    value          text not null,
    primary key (plan_id, entitlement_id)
);

-- The numeric entitlements of a plan, counted per billing period by usage_counters.
create table usage_limits (
    plan_id        bigint not null references plans (id),
    entitlement_id bigint not null references entitlements (id),
    limit_value    bigint not null,
    primary key (plan_id, entitlement_id)
);

-- Which plan a web price id or a mobile product id sells.
create table plan_prices (
    provider   text not null check (provider in ('web', 'mobile')),
    price_id   text not null,
    plan_id    bigint not null references plans (id),
    created_at timestamptz not null,
    primary key (provider, price_id)
);

create table billing_customers (
    id              bigint generated always as identity primary key,
    user_id         text not null unique,
    web_customer_id text unique,
    created_at      timestamptz not null,
    updated_at      timestamptz not null
);

-- The provider's view of one subscription: the snapshot of the last applied event and the
-- facts needed to order later events against it.
create table provider_subscriptions (
    id                       bigint generated always as identity primary key,
    provider                 text not null check (provider in ('web', 'mobile')),
    provider_subscription_id text not null,
    provider_customer_id     text,
    state                    text not null default '{}',
    last_event_id            text,
    last_event_type          text,
    last_event_at            timestamptz,
    paid_through             timestamptz,
    paid_event_at            timestamptz,
    created_at               timestamptz not null,
    updated_at               timestamptz not null,
    unique (provider, provider_subscription_id)
);

-- The canonical answer, the same shape whichever provider sold it.
create table subscriptions (
    id                       bigint generated always as identity primary key,
    provider_subscription_id bigint not null unique references provider_subscriptions (id),
    billing_customer_id      bigint not null references billing_customers (id),
    plan_id                  bigint not null references plans (id),
    provider                 text not null,
    status                   text not null check (status in ('active', 'trialing', 'past_due', 'cancelled', 'expired', 'refunded')),
    current_period_end       timestamptz,
    created_at               timestamptz not null,
    updated_at               timestamptz not null
);
create index subscriptions_billing_customer on subscriptions (billing_customer_id);

create table usage_counters (
    user_id    text not null,
    name       text not null,
    period_end timestamptz not null,
    used       bigint not null,
    created_at timestamptz not null,
    updated_at timestamptz not null,
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
