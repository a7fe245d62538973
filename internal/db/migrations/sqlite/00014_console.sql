-- +goose Up
-- What the operator console shows and cannot derive from the canonical rows.
--
-- Each provider event keeps what became of it: its outcome, the user it resolved to, the
-- provider subscription it named, and that subscription's canonical row before and after
-- it (plan, status, period end), so the customer's timeline can say what each event did.
alter table provider_events add column outcome text;
alter table provider_events add column user_id text;
alter table provider_events add column subscription_id text;
alter table provider_events add column plan_before text;
alter table provider_events add column status_before text;
alter table provider_events add column period_end_before timestamp;
alter table provider_events add column plan_after text;
alter table provider_events add column status_after text;
alter table provider_events add column period_end_after timestamp;
create index provider_events_user on provider_events (user_id, received_at) where user_id is not null;
-- The console's lists and daily counts read these without touching the payloads: events
-- by time with their outcome, the ones that need a hand, and the ones that ended something.
create index provider_events_received on provider_events (received_at, outcome);
-- It also serves replay's selection by time better than this one, which nothing reads.
drop index provider_events_processed;
create index provider_events_problems on provider_events (received_at) where outcome in ('unresolved', 'invalid');
create index provider_events_churn on provider_events (received_at, provider, status_before) where outcome = 'applied' and status_after in ('expired', 'refunded');
-- An event that resolved to nobody is found by the subscription it names; the others by
-- their user, so only the few unresolved ones are indexed by subscription.
create index provider_events_subscription on provider_events (subscription_id) where user_id is null;

-- The price of each provider subscription, when the provider sends it: the amount per
-- billing period in the currency's minor unit (quantity included), for MRR.
alter table provider_subscriptions add column amount bigint;
alter table provider_subscriptions add column currency text;
alter table provider_subscriptions add column billing_period text;
create index outbound_deliveries_user on outbound_deliveries (user_id, id);

-- The users tollgate has seen signed in, from their verified token's claims, so operators
-- can find a customer by e-mail.
create table known_users (
    user_id    text primary key,
    email      text not null,
    first_seen timestamp not null,
    last_seen  timestamp not null
);
create index known_users_email on known_users (lower(email));

-- A daily snapshot of what cannot be derived later: subscribers and MRR by provider, plan
-- and currency as they stood on that day (written by the server as the day goes on).
create table billing_days (
    day              date not null,
    provider         text not null,
    plan_key         text not null,
    currency         text not null,
    subscribers      bigint not null,
    unpriced         bigint not null,
    mrr_minor        bigint not null,
    primary key (day, provider, plan_key, currency)
);

-- Operators' actions from the console, naming who did what.
create table console_audit (
    id         integer primary key,
    operator   text not null,
    action     text not null,
    target     text not null,
    result     text not null,
    created_at timestamp not null
);

-- +goose Down
drop table console_audit;
drop table billing_days;
drop table known_users;
drop index outbound_deliveries_user;
alter table provider_subscriptions drop column billing_period;
alter table provider_subscriptions drop column currency;
alter table provider_subscriptions drop column amount;
drop index provider_events_subscription;
drop index provider_events_churn;
drop index provider_events_problems;
drop index provider_events_received;
create index provider_events_processed on provider_events (provider, processed_at);
drop index provider_events_user;
alter table provider_events drop column period_end_after;
alter table provider_events drop column status_after;
alter table provider_events drop column plan_after;
alter table provider_events drop column period_end_before;
alter table provider_events drop column status_before;
alter table provider_events drop column plan_before;
alter table provider_events drop column subscription_id;
alter table provider_events drop column user_id;
alter table provider_events drop column outcome;
