-- +goose Up
-- Retention (EVENT_RETENTION) removes stored events past the window. Each leaves its key
-- here, so that a redelivery of it is recognised as the duplicate it is and stores
-- nothing: a few dozen bytes kept where the event and its payload were.
create table pruned_events (
    provider          text not null,
    provider_event_id text not null,
    pruned_at         timestamp not null,
    primary key (provider, provider_event_id)
);
-- A subscription's newest event (the one its stored state came from) is never removed:
-- found by this index.
create index provider_subscriptions_last_event on provider_subscriptions (provider, last_event_id);

-- +goose Down
drop index provider_subscriptions_last_event;
drop table pruned_events;
